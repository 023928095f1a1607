package slack_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/review"
)

// addSilence adds a silence of matchers ending at end.
func (b *bundle) addSilence(t *testing.T, end time.Time, matchers ...string) silence.Silence {
	t.Helper()
	ns := silence.NewSilence{EndsAt: end, CreatedBy: "U0OPS", Comment: "provider migration"}
	for _, s := range matchers {
		m, err := silence.ParseMatcher(s)
		if err != nil {
			t.Fatal(err)
		}
		ns.Matchers = append(ns.Matchers, m)
	}
	s, err := b.silences.Add(b.ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func silenceEndedKey(ticketID, silenceID int64) string {
	return review.EventKey(ticketID, review.EventSilenceEnded, fmt.Sprint(silenceID))
}

// TestSilenceHoldsThenOneAlertPerOpenTicket: during an incident of one
// provider, a silence over it posts nothing for its tickets, which are
// still opened and escalated (their rows recorded silenced, with the
// silence's id), while another provider's ticket is posted; when a person
// ends it early, each of its tickets still open gets exactly one message —
// a new root, since none was ever posted — and the one resolved meanwhile
// none; the backlog it held is never posted.
func TestSilenceHoldsThenOneAlertPerOpenTicket(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", nil)
	s := b.addSilence(t, time.Now().Add(time.Hour), "provider=sms")

	var held []int64
	for range 3 {
		held = append(held, b.openTicketOf(t, "login", "sms"))
	}
	other := b.openTicketOf(t, "login", "mailer")
	escalated := []string{b.escalate(t, held[0], "U0NEXT"), b.escalate(t, held[1], "U0NEXT")}
	st := b.drain(t, d)
	if st.Silenced != 5 || st.Sent != 1 {
		t.Fatalf("stats %+v: want the 5 rows of the silenced provider silenced, 1 sent", st)
	}
	b.requireOne(t, openedKey(other))
	for _, key := range append([]string{openedKey(held[0]), openedKey(held[1]), openedKey(held[2])}, escalated...) {
		if n := b.row(t, key); n.State != outbox.StateSilenced || n.SilenceID != s.ID || len(b.fake.WithKey(key)) != 0 {
			t.Errorf("%s: %s by silence %d, %d messages; want silenced by %d, none", key, n.State, n.SilenceID, len(b.fake.WithKey(key)), s.ID)
		}
	}
	// Escalated as ever: the silence holds messages, not the ticket.
	tk, err := review.NewReader(b.pool, ledger.Native()).Ticket(b.ctx, held[0])
	if err != nil || tk.EscalationLevel != 1 || tk.Owner != "U0NEXT" {
		t.Fatalf("ticket %d: level %d owner %s, %v; want escalated", held[0], tk.EscalationLevel, tk.Owner, err)
	}
	got, err := b.silences.Get(b.ctx, s.ID)
	if err != nil || got.State != silence.Active || got.HeldRows != 5 || got.HeldTickets != 3 {
		t.Fatalf("silence %+v, %v; want active, 5 rows of 3 tickets", got, err)
	}

	// One resolves meanwhile: it gets nothing when the silence ends.
	if _, err := review.NewStore(b.pool, ledger.Native(), testPolicy).Resolve(b.ctx, review.Resolution{TicketID: held[2],
		Outcome: review.ResolutionNotSent, By: "U0OWNER"}); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, d); st.Silenced != 1 || st.Sent != 0 {
		t.Fatalf("stats %+v: the resolution is silenced too", st)
	}
	ended, err := b.silences.Expire(b.ctx, s.ID, "U0OPS")
	if err != nil || ended.ExpiredBy != "U0OPS" || ended.ExpiredAt == nil || ended.State != silence.Expired ||
		!ended.PlannedEnd.After(ended.EndsAt) {
		t.Fatalf("expire: %+v, %v", ended, err)
	}
	posts := len(b.fake.Calls("chat.postMessage"))
	st = b.drain(t, d)
	if st.SilenceAlerts != 2 || st.Sent != 2 {
		t.Fatalf("stats %+v: want one alert for each of the 2 tickets still open", st)
	}
	if got := len(b.fake.Calls("chat.postMessage")) - posts; got != 2 {
		t.Errorf("%d posts when the silence ended, want 2", got)
	}
	for _, id := range held[:2] {
		if m := b.requireOne(t, silenceEndedKey(id, s.ID)); m.ThreadTS != "" || m.Channel != alertsChannel {
			t.Errorf("ticket %d's alert in %s thread %q, want a new root in %s", id, m.Channel, m.ThreadTS, alertsChannel)
		}
	}
	if n := len(b.fake.WithKey(silenceEndedKey(held[2], s.ID))); n != 0 {
		t.Errorf("the ticket resolved meanwhile got %d messages, want none", n)
	}
	// Released once: later dispatches write nothing more.
	if st := b.drain(t, d); st.SilenceAlerts != 0 || st.Claimed != 0 {
		t.Errorf("a later dispatch: %+v", st)
	}
	// The ticket's next event goes in the thread of its new root.
	key := b.event(t, held[0], "noted", "noted:1")
	b.drain(t, d)
	root := b.requireOne(t, silenceEndedKey(held[0], s.ID))
	if m := b.requireOne(t, key); m.ThreadTS != root.TS {
		t.Errorf("next event in thread %q, want the new root %s", m.ThreadTS, root.TS)
	}
}

// TestSilenceEndedWhileDown: a silence that ends while no dispatcher runs
// is released by the first to start, once; a pending (future) silence
// holds nothing.
func TestSilenceEndedWhileDown(t *testing.T) {
	b := setup(t)
	d1 := b.dispatcher(t, "d1", nil)
	end := time.Now().Add(1500 * time.Millisecond)
	s := b.addSilence(t, end, "workflow=~log.*", "reason=not_found")
	later, err := b.silences.Add(b.ctx, silence.NewSilence{Matchers: []silence.Matcher{{Name: "provider", Op: "=", Value: "mailer"}},
		StartsAt: time.Now().Add(time.Hour), EndsAt: time.Now().Add(2 * time.Hour), CreatedBy: "U0OPS", Comment: "next week's migration"})
	if err != nil || later.State != silence.Pending {
		t.Fatalf("pending silence: %+v, %v", later, err)
	}
	id := b.openTicketOf(t, "login", "mailer")
	if st := b.drain(t, d1); st.Silenced != 1 {
		t.Fatalf("stats %+v, want the row silenced", st)
	}
	// Every dispatcher is down when the silence ends.
	time.Sleep(time.Until(end))
	got, err := b.silences.Get(b.ctx, s.ID)
	if err != nil || got.State != silence.Expired || got.ReleasedAt != nil {
		t.Fatalf("silence %+v, %v; want expired, not released", got, err)
	}
	d2 := b.dispatcher(t, "d2", nil)
	if st := b.drain(t, d2); st.SilenceAlerts != 1 || st.Sent != 1 {
		t.Fatalf("first dispatch after the restart: %+v", st)
	}
	b.requireOne(t, silenceEndedKey(id, s.ID))
	if st := b.drain(t, b.dispatcher(t, "d3", nil)); st.SilenceAlerts != 0 || st.Sent != 0 {
		t.Fatalf("another replica's dispatch: %+v, want nothing", st)
	}
	if got, err := b.silences.Get(b.ctx, s.ID); err != nil || got.ReleasedAt == nil {
		t.Fatalf("silence %+v, %v; want released", got, err)
	}
}

// TestTwoReplicasReleaseASilenceOnce: dispatchers of two replicas that
// find the same ended silence at once give each of its tickets one alert.
func TestTwoReplicasReleaseASilenceOnce(t *testing.T) {
	b := setup(t)
	d1, d2 := b.dispatcher(t, "d1", nil), b.dispatcher(t, "d2", nil)
	s := b.addSilence(t, time.Now().Add(time.Hour), "provider=sms")
	var ids []int64
	for range 5 {
		ids = append(ids, b.openTicketOf(t, "login", "sms"))
	}
	b.drain(t, d1)
	if _, err := b.silences.Expire(b.ctx, s.ID, "U0OPS"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total notify.Stats
	for _, d := range []*notify.Dispatcher{d1, d2, d1, d2} {
		wg.Go(func() {
			st, err := d.Drain(b.ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total.Add(st)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.drain(t, d1)
	if total.SilenceAlerts != len(ids) {
		t.Errorf("%d tickets released in all, want %d", total.SilenceAlerts, len(ids))
	}
	for _, id := range ids {
		b.requireOne(t, silenceEndedKey(id, s.ID))
	}
	var events int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM sweeper.ticket_events WHERE kind = $1`, review.EventSilenceEnded).Scan(&events); err != nil || events != len(ids) {
		t.Fatalf("%d silence_ended events, %v; want %d", events, err, len(ids))
	}
}

// TestSilenceHoldsAProvidersIncident: a silence over a provider alone
// holds its incident's messages too; one that names more than the
// provider (a reason) does not, as an incident has no reason.
func TestSilenceHoldsAProvidersIncident(t *testing.T) {
	for _, tc := range []struct {
		matchers []string
		want     string
	}{
		{[]string{"provider=sms"}, outbox.StateSilenced},
		{[]string{"provider=sms", "reason=lookup_failed"}, outbox.StateSent},
	} {
		t.Run(fmt.Sprint(tc.matchers), func(t *testing.T) {
			b := setup(t)
			d := b.dispatcher(t, "d1", nil)
			s := b.addSilence(t, time.Now().Add(time.Hour), tc.matchers...)
			var incident int64
			err := b.pool.QueryRow(b.ctx, `WITH i AS (INSERT INTO sweeper.incidents (provider, started_at, waiting) VALUES ('sms', now(), 3) RETURNING id)
				INSERT INTO sweeper.outbox (incident_id, dedupe_key, kind) SELECT id, 'incident:' || id || ':opened', $1 FROM i
				RETURNING incident_id`, outbox.KindIncidentOpened).Scan(&incident)
			if err != nil {
				t.Fatal(err)
			}
			b.drain(t, d)
			n := b.row(t, fmt.Sprintf("incident:%d:opened", incident))
			if n.State != tc.want || (tc.want == outbox.StateSilenced && n.SilenceID != s.ID) {
				t.Fatalf("incident row %s (silence %d), want %s", n.State, n.SilenceID, tc.want)
			}
		})
	}
}

// TestSilencedRowsAreCounted: each row a silence holds counts in
// sweeper_slack_silenced_total, and in the outbox's states.
func TestSilencedRowsAreCounted(t *testing.T) {
	b := setup(t)
	d, reg := b.countingDispatcher(t)
	b.addSilence(t, time.Now().Add(time.Hour), "workflow=billing")
	id := b.openTicket(t, "billing")
	b.escalate(t, id, "U0NEXT")
	b.openTicket(t, "onboarding")
	b.drain(t, d)
	if got := metricstest.NonZero(t, reg, "sweeper_slack_silenced_total"); len(got) != 1 || got["receiver=slack"] != 2 {
		t.Errorf("sweeper_slack_silenced_total = %v, want 2", got)
	}
	counts, err := b.outbox.Counts(b.ctx)
	if err != nil || counts[outbox.StateSilenced] != 2 || counts[outbox.StateSent] != 1 {
		t.Errorf("outbox counts %v, %v; want 2 silenced, 1 sent", counts, err)
	}
}

// TestSilenceOverManyNewTicketsEndsInOneGroup: a silence over a large
// incident holds the first alerts of the tickets opened during it; when it
// ends, their current alerts take the path of fresh first alerts — one
// alert group's message, at most slack.group_detail_limit of them in its
// thread, the rest folded into its counts — not one root per ticket. Each
// shows the ticket as it is now. A ticket whose root was posted before the
// silence gets a reply in its thread, as ever; no row is left pending.
func TestSilenceOverManyNewTicketsEndsInOneGroup(t *testing.T) {
	b := setup(t)
	const limit, opened = 5, 30
	d := b.boundedDispatcher(t, "d1", limit, time.Nanosecond, nil)
	posted := b.openTicketOf(t, "login", "sms")
	b.drain(t, d)
	root := b.requireOne(t, openedKey(posted)) // alone: below the group threshold

	s := b.addSilence(t, time.Now().Add(time.Hour), "provider=sms")
	var held []int64
	for range opened {
		held = append(held, b.openTicketOf(t, "login", "sms"))
	}
	b.escalate(t, posted, "U0NEXT")
	b.escalate(t, held[0], "U0NEXT")
	if st := b.drain(t, d); st.Silenced != opened+2 || st.Sent != 0 {
		t.Fatalf("during the silence: %+v, want %d rows silenced", st, opened+2)
	}
	if _, err := b.silences.Expire(b.ctx, s.ID, "U0OPS"); err != nil {
		t.Fatal(err)
	}
	posts := len(b.fake.Calls("chat.postMessage"))
	if st := b.drain(t, d); st.SilenceAlerts != opened+1 {
		t.Fatalf("after the silence: %+v, want %d tickets given their current alert", st, opened+1)
	}
	b.requireNothingPending(t)

	groups := b.groupRoots()
	if len(groups) != 1 {
		t.Fatalf("%d alert group messages, want 1", len(groups))
	}
	g := groups[0]
	if want := fmt.Sprintf("%d review tickets open for `sms`", opened); !strings.Contains(g.Text, want) {
		t.Errorf("group message %q, want %q", g.Text, want)
	}
	if got := len(b.fake.Calls("chat.postMessage")) - posts; got != 1+limit+1 {
		t.Errorf("%d posts when the silence ended, want the group's message, %d alerts in its thread and one reply", got, limit)
	}
	if m := b.requireOne(t, silenceEndedKey(posted, s.ID)); m.ThreadTS != root.TS {
		t.Errorf("the posted ticket's alert in thread %q, want a reply in its root's %s", m.ThreadTS, root.TS)
	}
	group := groupID(t, g)
	var sent, folded int
	for _, id := range held {
		key := silenceEndedKey(id, s.ID)
		n := b.row(t, key)
		switch {
		case n.State == outbox.StateSent && n.GroupID == group:
			sent++
			m := b.requireOne(t, key)
			if m.ThreadTS != g.TS {
				t.Errorf("ticket %d's alert in thread %q, want the group's %s", id, m.ThreadTS, g.TS)
			}
			if want := fmt.Sprintf("Silence %d ended. Still open", s.ID); !strings.Contains(m.Text, want) {
				t.Errorf("ticket %d's alert %q, want %q", id, m.Text, want)
			}
		case n.State == outbox.StateFolded && n.GroupID == group && n.ErrorCode == outbox.CodeOverDetailLimit:
			folded++
			if msgs := b.fake.WithKey(key); len(msgs) != 0 {
				t.Errorf("ticket %d's folded alert posted: %+v", id, msgs)
			}
		default:
			t.Errorf("ticket %d's alert: %s in group %d (%s), want sent in or folded into group %d", id, n.State, n.GroupID, n.ErrorCode, group)
		}
	}
	if sent != limit || folded != opened-limit {
		t.Errorf("%d alerts in the group's thread and %d folded, want %d and %d", sent, folded, limit, opened-limit)
	}
	// The current state: the escalated ticket's alert names its new owner
	// and level, with its buttons.
	m := b.requireOne(t, silenceEndedKey(held[0], s.ID))
	if !strings.Contains(m.Text, "owner <@U0NEXT>, escalation level 1") || !strings.Contains(string(m.Blocks), message.ActionAck) {
		t.Errorf("the escalated ticket's alert %q (blocks %s), want its current owner and level, and its buttons", m.Text, m.Blocks)
	}
	// A ticket's next event goes in the group's thread, where its alert is.
	key := b.event(t, held[1], "noted", "noted:1")
	b.drain(t, d)
	if m := b.requireOne(t, key); m.ThreadTS != g.TS {
		t.Errorf("next event in thread %q, want the group's %s", m.ThreadTS, g.TS)
	}
}
