package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/internal/testkit/dbtest"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

func TestParseMatcher(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want outbox.Matcher
		err  bool
	}{
		{in: "provider=sms", want: outbox.Matcher{Name: "provider", Op: "=", Value: "sms"}},
		{in: "workflow=~log.*", want: outbox.Matcher{Name: "workflow", Op: "=~", Value: "log.*"}},
		{in: "escalation_level=2", want: outbox.Matcher{Name: "escalation_level", Op: "=", Value: "2"}},
		{in: "owner=", want: outbox.Matcher{Name: "owner", Op: "=", Value: ""}},
		{in: "reason==x", want: outbox.Matcher{Name: "reason", Op: "=", Value: "=x"}},
		{in: "provider", err: true},
		{in: "=sms", err: true},
		{in: "recipient=a@b", err: true},
		{in: "provider!=sms", err: true},
	} {
		got, err := outbox.ParseMatcher(tc.in)
		if tc.err {
			if !errors.Is(err, outbox.ErrInvalidSilence) {
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
	s := outbox.NewStore(dbtest.Tx(t))
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
		var ms []outbox.Matcher
		for _, m := range tc.matchers {
			p, err := outbox.ParseMatcher(m)
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
	s := outbox.NewStore(dbtest.Tx(t))
	now := time.Now()
	ok := outbox.NewSilence{Matchers: []outbox.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: now.Add(time.Hour), CreatedBy: "U0OPS", Comment: "migration"}
	if err := s.CheckSilence(ctx, ok); err != nil {
		t.Fatalf("a valid silence: %v", err)
	}
	for _, tc := range []struct {
		desc string
		edit func(*outbox.NewSilence)
		want string
	}{
		{"no matchers", func(n *outbox.NewSilence) { n.Matchers = nil }, "no matchers"},
		{"no end", func(n *outbox.NewSilence) { n.EndsAt = time.Time{} }, "an end is required"},
		{"end in the past", func(n *outbox.NewSilence) { n.EndsAt = now.Add(-time.Minute) }, "after its start"},
		{"future start, earlier end", func(n *outbox.NewSilence) { n.StartsAt = now.Add(2 * time.Hour) }, "after its start"},
		{"end at its start", func(n *outbox.NewSilence) { n.StartsAt = now.Add(time.Hour) }, "after its start"},
		{"past start, past end", func(n *outbox.NewSilence) {
			n.StartsAt, n.EndsAt = now.Add(-2*time.Hour), now.Add(-time.Hour)
		}, "in the past"},
		{"too long", func(n *outbox.NewSilence) { n.EndsAt = now.Add(outbox.MaxSilence + time.Hour) }, "at most"},
		{"bad pattern", func(n *outbox.NewSilence) {
			n.Matchers = append(n.Matchers, outbox.Matcher{Name: "workflow", Op: "=~", Value: "log(in"})
		}, "not a PostgreSQL regular expression"},
		{"matches everything", func(n *outbox.NewSilence) {
			n.Matchers = []outbox.Matcher{{Name: "provider", Op: "=~", Value: ".*"}, {Name: "owner", Op: "=", Value: ""}}
		}, "match everything"},
		{"unknown label", func(n *outbox.NewSilence) { n.Matchers[0].Name = "recipient" }, "no label"},
		{"author not a Slack user", func(n *outbox.NewSilence) { n.CreatedBy = "alice" }, "Slack user id"},
		{"no comment", func(n *outbox.NewSilence) { n.Comment = "  " }, "comment is required"},
	} {
		ns := ok
		ns.Matchers = append([]outbox.Matcher(nil), ok.Matchers...)
		tc.edit(&ns)
		err := s.CheckSilence(ctx, ns)
		if !errors.Is(err, outbox.ErrInvalidSilence) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrInvalidSilence saying %q", tc.desc, err, tc.want)
		}
		if _, err := s.AddSilence(ctx, ns); !errors.Is(err, outbox.ErrInvalidSilence) {
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
	s := outbox.NewStore(tx)
	added, err := s.AddSilence(ctx, outbox.NewSilence{Matchers: []outbox.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "migration"})
	if err != nil || added.State != outbox.SilenceActive {
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
	if _, err := s.ExpireSilence(ctx, added.ID, "alice"); !errors.Is(err, outbox.ErrInvalidSilence) {
		t.Errorf("expired by a name that is no Slack user: %v", err)
	}
	if _, err := s.ExpireSilence(ctx, added.ID, "U0OPS"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExpireSilence(ctx, added.ID, "U0OPS"); !errors.Is(err, outbox.ErrSilenceEnded) {
		t.Errorf("expired twice: %v", err)
	}
	if _, err := s.ExpireSilence(ctx, added.ID+1000, "U0OPS"); !errors.Is(err, outbox.ErrSilenceNotFound) {
		t.Errorf("expired a silence that does not exist: %v", err)
	}
	list, err := s.Silences(ctx, outbox.SilenceFilter{States: []string{outbox.SilenceExpired}})
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
	if _, err := store.SetRoutes(ctx, []outbox.Route{{Receiver: outbox.ReceiverSlack}, {Receiver: outbox.ReceiverPagerDuty}}); err != nil {
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
	s, err := store.AddSilence(ctx, outbox.NewSilence{Matchers: []outbox.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "migration"})
	if err != nil {
		t.Fatal(err)
	}
	fresh := openTicket(t, pool, "k-fresh", "login", "sms")
	// unheld's Slack row is still pending when the silence ends: only its
	// PagerDuty row was held.
	unheld := openTicket(t, pool, "k-unheld", "login", "sms")
	silence := func(rows *outbox.Store, tickets ...int64) {
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
			if id, err := rows.Silence(ctx, n, review.Labels{Provider: "sms"}); err != nil || id != s.ID {
				t.Fatalf("silence row %d: %d, %v", n.ID, id, err)
			}
		}
	}
	silence(pdRows, posted, fresh, unheld)
	silence(slackRows, fresh)
	if _, err := store.ExpireSilence(ctx, s.ID, "U0OPS"); err != nil {
		t.Fatal(err)
	}
	released, err := store.ReleaseEnded(ctx)
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
