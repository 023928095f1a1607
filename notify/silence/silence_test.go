package silence_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

func TestParseMatcher(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want silence.Matcher
		err  bool
	}{
		{in: "provider=sms", want: silence.Matcher{Name: "provider", Op: "=", Value: "sms"}},
		{in: "workflow=~log.*", want: silence.Matcher{Name: "workflow", Op: "=~", Value: "log.*"}},
		{in: "escalation_level=2", want: silence.Matcher{Name: "escalation_level", Op: "=", Value: "2"}},
		{in: "owner=", want: silence.Matcher{Name: "owner", Op: "=", Value: ""}},
		{in: "reason==x", want: silence.Matcher{Name: "reason", Op: "=", Value: "=x"}},
		{in: "provider", err: true},
		{in: "=sms", err: true},
		{in: "recipient=a@b", err: true},
		{in: "provider!=sms", err: true},
	} {
		got, err := silence.ParseMatcher(tc.in)
		if tc.err {
			if !errors.Is(err, silence.ErrInvalid) {
				t.Errorf("ParseMatcher(%q) = %+v, %v; want ErrInvalidSilence", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseMatcher(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("%+v prints %q, want %q", got, got.String(), tc.in)
		}
	}
}

// TestSilenceMatching: a silence matches labels when every matcher does;
// a pattern matches the whole value; a label the row does not have is "".
func TestSilenceMatching(t *testing.T) {
	ctx := context.Background()
	s := silence.NewStore(dbtest.Tx(t))
	sms := review.Labels{Provider: "sms", Workflow: "login", Reason: "not_found", Owner: "U0A", EscalationLevel: "1", Count: 1}
	incident := review.Labels{Provider: "sms", Count: 1}
	for _, tc := range []struct {
		matchers []string
		labels   review.Labels
		want     bool
	}{
		{[]string{"provider=sms"}, sms, true},
		{[]string{"provider=SMS"}, sms, false},
		{[]string{"provider=sm"}, sms, false},
		{[]string{"provider=~sm"}, sms, false}, // anchored: the whole value
		{[]string{"provider=~sm.*"}, sms, true},
		{[]string{"workflow=~login|signup"}, sms, true},
		{[]string{"workflow=~log|sign"}, sms, false}, // alternation inside the anchors
		{[]string{"workflow=~xlogin|y"}, sms, false},
		{[]string{"provider=sms", "reason=not_found"}, sms, true},
		{[]string{"provider=sms", "reason=lookup_failed"}, sms, false},
		{[]string{"owner=U0A", "escalation_level=~[1-9]"}, sms, true},
		{[]string{"escalation_level=0"}, sms, false},
		{[]string{"provider=sms"}, incident, true},
		{[]string{"provider=sms", "workflow=login"}, incident, false},
		{[]string{"provider=sms", "workflow=~.*"}, incident, true},
	} {
		var ms []silence.Matcher
		for _, m := range tc.matchers {
			p, err := silence.ParseMatcher(m)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, p)
		}
		n, err := s.MatchCount(ctx, ms, []review.Labels{tc.labels})
		if err != nil || (n == 1) != tc.want {
			t.Errorf("%v on %+v: %d, %v; want match %v", tc.matchers, tc.labels, n, err, tc.want)
		}
	}
}

// TestCheckSilence: a silence is refused without matchers, without an
// end, with an end in the past or before its start, longer than
// MaxSilence, with a pattern PostgreSQL cannot read, with matchers that
// match everything, without a Slack user as author or without a comment.
func TestCheckSilence(t *testing.T) {
	ctx := context.Background()
	s := silence.NewStore(dbtest.Tx(t))
	now := time.Now()
	ok := silence.NewSilence{Matchers: []silence.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: now.Add(time.Hour), CreatedBy: "U0OPS", Comment: "migration"}
	if err := s.Check(ctx, ok); err != nil {
		t.Fatalf("a valid silence: %v", err)
	}
	for _, tc := range []struct {
		desc string
		edit func(*silence.NewSilence)
		want string
	}{
		{"no matchers", func(n *silence.NewSilence) { n.Matchers = nil }, "no matchers"},
		{"no end", func(n *silence.NewSilence) { n.EndsAt = time.Time{} }, "an end is required"},
		{"end in the past", func(n *silence.NewSilence) { n.EndsAt = now.Add(-time.Minute) }, "after its start"},
		{"future start, earlier end", func(n *silence.NewSilence) { n.StartsAt = now.Add(2 * time.Hour) }, "after its start"},
		{"end at its start", func(n *silence.NewSilence) { n.StartsAt = now.Add(time.Hour) }, "after its start"},
		{"past start, past end", func(n *silence.NewSilence) {
			n.StartsAt, n.EndsAt = now.Add(-2*time.Hour), now.Add(-time.Hour)
		}, "in the past"},
		{"too long", func(n *silence.NewSilence) { n.EndsAt = now.Add(silence.MaxSilence + time.Hour) }, "at most"},
		{"bad pattern", func(n *silence.NewSilence) {
			n.Matchers = append(n.Matchers, silence.Matcher{Name: "workflow", Op: "=~", Value: "log(in"})
		}, "not a PostgreSQL regular expression"},
		{"matches everything", func(n *silence.NewSilence) {
			n.Matchers = []silence.Matcher{{Name: "provider", Op: "=~", Value: ".*"}, {Name: "owner", Op: "=", Value: ""}}
		}, "match everything"},
		{"unknown label", func(n *silence.NewSilence) { n.Matchers[0].Name = "recipient" }, "no label"},
		{"author not a Slack user", func(n *silence.NewSilence) { n.CreatedBy = "alice" }, "Slack user id"},
		{"no comment", func(n *silence.NewSilence) { n.Comment = "  " }, "comment is required"},
	} {
		ns := ok
		ns.Matchers = append([]silence.Matcher(nil), ok.Matchers...)
		tc.edit(&ns)
		err := s.Check(ctx, ns)
		if !errors.Is(err, silence.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrInvalidSilence saying %q", tc.desc, err, tc.want)
		}
		if _, err := s.Add(ctx, ns); !errors.Is(err, silence.ErrInvalid) {
			t.Errorf("%s: added: %v", tc.desc, err)
		}
	}
}

// TestSilenceIsFinal: a silence's matchers and author never change, its
// end only moves earlier, once; it is never deleted; expiring one twice is
// refused.
func TestSilenceIsFinal(t *testing.T) {
	ctx := context.Background()
	tx := dbtest.Tx(t)
	s := silence.NewStore(tx)
	added, err := s.Add(ctx, silence.NewSilence{Matchers: []silence.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "migration"})
	if err != nil || added.State != silence.Active {
		t.Fatalf("add: %+v, %v", added, err)
	}
	for _, stmt := range []string{
		`UPDATE sweeper.silences SET matchers = '[{"name":"provider","op":"=","value":"x"}]' WHERE id = $1`,
		`UPDATE sweeper.silences SET ends_at = ends_at + interval '1 hour' WHERE id = $1`,
		`UPDATE sweeper.silences SET created_by = 'U0OTHER' WHERE id = $1`,
		`DELETE FROM sweeper.silences WHERE id = $1`,
	} {
		if _, err := tx.Exec(ctx, "SAVEPOINT s"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, stmt, added.ID); err == nil {
			t.Errorf("%s: allowed", stmt)
		}
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Expire(ctx, added.ID, "alice"); !errors.Is(err, silence.ErrInvalid) {
		t.Errorf("expired by a name that is no Slack user: %v", err)
	}
	if _, err := s.Expire(ctx, added.ID, "U0OPS"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expire(ctx, added.ID, "U0OPS"); !errors.Is(err, silence.ErrEnded) {
		t.Errorf("expired twice: %v", err)
	}
	if _, err := s.Expire(ctx, added.ID+1000, "U0OPS"); !errors.Is(err, silence.ErrNotFound) {
		t.Errorf("expired a silence that does not exist: %v", err)
	}
	list, err := s.List(ctx, silence.Filter{States: []string{silence.Expired}})
	if err != nil || len(list) != 1 || list[0].ExpiredBy != "U0OPS" {
		t.Fatalf("expired silences: %+v, %v", list, err)
	}
}

// TestReleaseGivesAHeldTicketItsFirstAlert: when a silence ends, the
// Slack row of a ticket's silence_ended event is the ticket's first alert
// (kind opened: it waits slack.group_wait and joins alert groups as one)
// when every earlier Slack row of the ticket was silenced; it stays a
// reply when the ticket has a root posted, or a Slack row the silence did
// not hold. Another receiver's row keeps the event's kind (PagerDuty's
// trigger).
func TestReleaseGivesAHeldTicketItsFirstAlert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	store := outbox.NewStore(pool)
	silences := silence.NewStore(pool)
	if _, err := outbox.NewRoutes(pool).SetRoutes(ctx, []outbox.Route{{Receiver: outbox.ReceiverSlack}, {Receiver: outbox.ReceiverPagerDuty}}); err != nil {
		t.Fatal(err)
	}
	slackRows, pdRows := store.For(outbox.ReceiverSlack), store.For(outbox.ReceiverPagerDuty)
	posted := openTicket(t, pool, "k-posted", "login", "sms")
	claimed, err := slackRows.Claim(ctx, "d1", time.Minute, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	if err := slackRows.MarkSent(ctx, claimed[0], "C0ALERTS", "1700000000.000100"); err != nil {
		t.Fatal(err)
	}
	s, err := silences.Add(ctx, silence.NewSilence{Matchers: []silence.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "migration"})
	if err != nil {
		t.Fatal(err)
	}
	fresh := openTicket(t, pool, "k-fresh", "login", "sms")
	// unheld's Slack row is still pending when the silence ends: only its
	// PagerDuty row was held.
	unheld := openTicket(t, pool, "k-unheld", "login", "sms")
	hold := func(rows *outbox.Store, tickets ...int64) {
		t.Helper()
		claimed, err := rows.Claim(ctx, "d1", time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range claimed {
			if !slices.Contains(tickets, n.TicketID) {
				if err := rows.Release(ctx, n, 0); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if id, err := silences.Mute(ctx, n, review.Labels{Provider: "sms"}); err != nil || id != s.ID {
				t.Fatalf("silence row %d: %d, %v", n.ID, id, err)
			}
		}
	}
	hold(pdRows, posted, fresh, unheld)
	hold(slackRows, fresh)
	if _, err := silences.Expire(ctx, s.ID, "U0OPS"); err != nil {
		t.Fatal(err)
	}
	released, err := silences.ReleaseEnded(ctx)
	if err != nil || len(released) != 1 || len(released[0].Tickets) != 3 {
		t.Fatalf("release: %+v, %v; want the 3 tickets", released, err)
	}
	for _, tc := range []struct {
		ticket    int64
		slackKind string
	}{
		{posted, review.EventSilenceEnded},
		{fresh, outbox.KindOpened},
		{unheld, review.EventSilenceEnded},
	} {
		rows, err := store.List(ctx, outbox.Filter{TicketID: tc.ticket})
		if err != nil {
			t.Fatal(err)
		}
		key := review.EventKey(tc.ticket, review.EventSilenceEnded, fmt.Sprint(s.ID))
		got := map[string]string{}
		for _, n := range rows {
			if n.DedupeKey == key {
				got[n.Receiver] = n.Kind
			}
		}
		want := map[string]string{outbox.ReceiverSlack: tc.slackKind, outbox.ReceiverPagerDuty: review.EventSilenceEnded}
		if !maps.Equal(got, want) {
			t.Errorf("ticket %d's %s rows: kinds %v, want %v", tc.ticket, key, got, want)
		}
	}
}
