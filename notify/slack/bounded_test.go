package slack_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// boundedDispatcher groups from 3 tickets and gives at most limit of a
// group's tickets their own alert in its thread; the group's message is
// edited at most once per interval.
func (b *bundle) boundedDispatcher(t *testing.T, id string, limit int, interval time.Duration, m *metrics.Metrics) *notify.Dispatcher {
	return b.dispatcher(t, id, func(c *slack.Config) {
		c.Composer = slack.TicketComposer{Tickets: c.Tickets}
		c.GroupThreshold = 3
		c.GroupDetailLimit = limit
		c.GroupInterval = interval
		c.Metrics = m
	})
}

// rowsOf returns the outbox rows of tickets ids, by dedupe key.
func (b *bundle) rowsOf(t *testing.T, ids []int64) map[string]outbox.Notification {
	t.Helper()
	out := map[string]outbox.Notification{}
	for _, id := range ids {
		list, err := b.outbox.List(b.ctx, outbox.Filter{TicketID: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range list {
			out[n.DedupeKey] = n
		}
	}
	return out
}

// TestAlertGroupFoldsPastItsDetailLimit: a group that passes
// slack.group_detail_limit mid-flight has the first tickets' alerts in its
// thread and folds the rest — each folded row recorded with its group and
// counted, never posted — and its message, edited, counts them and says
// how to list them all; a folded ticket's resolution is folded too, and
// shows in the counts.
func TestAlertGroupFoldsPastItsDetailLimit(t *testing.T) {
	b := setup(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 3
	d := b.boundedDispatcher(t, "d1", limit, time.Nanosecond, m)
	var first []int64
	for range 3 {
		first = append(first, b.openTicket(t, "onboarding"))
	}
	b.drain(t, d)
	groups := b.groupRoots()
	if len(groups) != 1 {
		t.Fatalf("%d group messages, want 1", len(groups))
	}
	g := groups[0]
	for _, id := range first {
		if m := b.requireOne(t, openedKey(id)); m.ThreadTS != g.TS {
			t.Errorf("ticket %d's alert in thread %q, want the group's %s", id, m.ThreadTS, g.TS)
		}
	}

	// More tickets join the group while it is open: past the limit, they
	// are folded.
	var later []int64
	for range 4 {
		later = append(later, b.openTicket(t, "onboarding"))
	}
	st := b.drain(t, d)
	if st.Folded != 4 || st.Sent != 0 {
		t.Errorf("stats %+v, want 4 folded and nothing sent", st)
	}
	group := groupID(t, g)
	for key, n := range b.rowsOf(t, later) {
		if n.State != outbox.StateFolded || n.GroupID != group || n.ErrorCode != outbox.CodeOverDetailLimit || n.Reference != "" {
			t.Errorf("%s: %s in group %d (%s, ts %q), want folded into group %d, over_detail_limit, never posted",
				key, n.State, n.GroupID, n.ErrorCode, n.Reference, group)
		}
		if len(b.fake.WithKey(key)) != 0 {
			t.Errorf("%s: posted, want folded", key)
		}
	}
	if got := len(b.fake.Calls("chat.postMessage")); got != 1+limit {
		t.Errorf("%d posts, want the group's message and %d alerts", got, limit)
	}
	if got := metricstest.NonZero(t, reg, "sweeper_slack_folded_total"); got[""] != 4 {
		t.Errorf("sweeper_slack_folded_total %v, want 4", got)
	}
	g = b.groupRoots()[0]
	blocks := string(g.Blocks)
	for _, want := range []string{
		"7 review tickets open for `mailer`: no record found.",
		fmt.Sprintf("%d tickets' alerts are in this thread; 4 more are counted here only", limit),
		fmt.Sprintf("sweeper tickets list --group %d", group),
		fmt.Sprintf("Oldest: #%d", first[0]),
		fmt.Sprintf("Newest: #%d", later[3]),
	} {
		if !strings.Contains(g.Text+blocks, want) {
			t.Errorf("group message %q, blocks %s; want %q", g.Text, blocks, want)
		}
	}

	// A folded ticket resolves: its row is folded too, and the group's
	// message counts it.
	store := review.NewStore(b.pool, ledger.Native(), testPolicy)
	if _, err := store.Resolve(b.ctx, review.Resolution{TicketID: later[0], Outcome: review.ResolutionNotSent, By: "cli:alice"}); err != nil {
		t.Fatal(err)
	}
	b.drain(t, d)
	resolved := b.row(t, fmt.Sprintf("ticket:%d:resolved", later[0]))
	if resolved.State != outbox.StateFolded || resolved.GroupID != group || resolved.ErrorCode != outbox.CodeFoldedTicket {
		t.Errorf("the folded ticket's resolution: %s in group %d (%s), want folded into %d", resolved.State, resolved.GroupID, resolved.ErrorCode, group)
	}
	if g = b.groupRoots()[0]; !strings.Contains(g.Text, "6 review tickets open for `mailer`: no record found (1 more resolved).") {
		t.Errorf("group message after a folded ticket resolved: %q", g.Text)
	}
	if got := len(b.fake.Calls("chat.postMessage")); got != 1+limit {
		t.Errorf("%d posts, want still %d", got, 1+limit)
	}
}

// TestNoDetailIsTheGroupMessageAlone: with a detail limit of none, a
// group's message is its only message; every ticket is folded into it.
func TestNoDetailIsTheGroupMessageAlone(t *testing.T) {
	b := setup(t)
	d := b.boundedDispatcher(t, "d1", -1, time.Hour, nil)
	var ids []int64
	for range 5 {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	b.drain(t, d)
	if got := len(b.fake.Messages()); got != 1 || len(b.groupRoots()) != 1 {
		t.Fatalf("%d messages, want the group's alone", got)
	}
	for key, n := range b.rowsOf(t, ids) {
		if n.State != outbox.StateFolded {
			t.Errorf("%s: %s, want folded", key, n.State)
		}
	}
	// An escalation to a new owner still reaches them: one message of its
	// own per owner and interval, even with none in the thread.
	first := b.escalate(t, ids[0], "U0NEXT")
	second := b.escalate(t, ids[1], "U0NEXT")
	b.drain(t, d)
	b.requireOne(t, first)
	if n := b.row(t, second); n.State != outbox.StateFolded {
		t.Errorf("a second escalation to the same owner within the interval: %s, want folded", n.State)
	}
}

// TestNothingFoldsIntoARemovedGroup: once a group's message is known to be
// removed from Slack (a reply in its thread was refused), nothing is folded
// into it any more: its tickets' alerts are posted alone, whatever the
// limit. (A row folded before is final: `tickets list --group` lists it.)
func TestNothingFoldsIntoARemovedGroup(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Composer = slack.TicketComposer{Tickets: c.Tickets}
		c.GroupThreshold, c.GroupDetailLimit, c.GroupInterval, c.BatchSize = 3, 1, time.Nanosecond, 1
	})
	var ids []int64
	for range 3 {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	for range 2 { // the group is made, then its message posted
		if _, err := d.DispatchOnce(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	g := b.groupRoots()
	if len(g) != 1 || len(b.fake.Messages()) != 1 || !b.fake.Delete(g[0].Channel, g[0].TS) {
		t.Fatalf("%d group messages; want one, deleted", len(g))
	}
	b.drain(t, d)
	for _, id := range ids {
		if m := b.requireOne(t, openedKey(id)); m.ThreadTS != "" {
			t.Errorf("ticket %d's alert in thread %q, want a root of its own", id, m.ThreadTS)
		}
	}
}

// escalate moves ticket id up one escalation level, to owner, as the
// escalation job does, and returns its event's dedupe key.
func (b *bundle) escalate(t *testing.T, id int64, owner string) string {
	t.Helper()
	store := review.NewStore(b.pool, ledger.Native(), testPolicy)
	et, err := store.EscalationTicket(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	step := review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: 0, ToLevel: 1, Owner: owner,
		Priority: "high", Deadline: time.Now().Add(time.Hour)}
	details := review.EscalatedDetails{Step: step.Kind, FromLevel: 0, ToLevel: 1, Owner: owner, Priority: "high", Deadline: step.Deadline}
	if ok, err := store.Escalate(b.ctx, et, step, details, nil); err != nil || !ok {
		t.Fatalf("escalate ticket %d: %v, %v", id, ok, err)
	}
	return step.DedupeKey(id)
}

// TestEscalationInAFoldedGroupReachesTheNewOwner: a folded ticket's
// escalation to a new owner gets a message of its own — the ticket's root
// message, with its buttons, naming the new owner — and the ticket's later
// events go in that message's thread; past the owner's bound
// (slack.group_detail_limit per slack.group_interval) the escalations of
// other folded tickets to the same owner are folded.
func TestEscalationInAFoldedGroupReachesTheNewOwner(t *testing.T) {
	b := setup(t)
	const limit = 2
	d := b.boundedDispatcher(t, "d1", limit, time.Hour, nil)
	var ids []int64
	for range 6 {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	b.drain(t, d)
	folded := ids[limit:]
	for _, id := range folded {
		if n := b.row(t, openedKey(id)); n.State != outbox.StateFolded {
			t.Fatalf("ticket %d's alert %s, want folded", id, n.State)
		}
	}

	var keys []string
	for _, id := range folded[:3] {
		keys = append(keys, b.escalate(t, id, "U0NEXT"))
	}
	b.drain(t, d)
	for i, key := range keys[:limit] {
		m := b.requireOne(t, key)
		if m.ThreadTS != "" || !strings.Contains(m.Text, "U0NEXT") || !strings.Contains(string(m.Blocks), "counted in its alert group") {
			t.Errorf("escalation %s: %q in thread %q, blocks %s; want a root message naming the new owner", key, m.Text, m.ThreadTS, m.Blocks)
		}
		// Its later events go in its thread, as any ticket's.
		ack := b.event(t, folded[i], review.EventAcknowledged, "acknowledged:1")
		b.drain(t, d)
		if reply := b.requireOne(t, ack); reply.ThreadTS != m.TS {
			t.Errorf("%s in thread %q, want the escalation's %s", ack, reply.ThreadTS, m.TS)
		}
	}
	over := b.row(t, keys[limit])
	if over.State != outbox.StateFolded || over.ErrorCode != outbox.CodeFoldedTicket || len(b.fake.WithKey(keys[limit])) != 0 {
		t.Errorf("the escalation past the owner's bound: %s (%s), want folded, not posted", over.State, over.ErrorCode)
	}
}

// TestOneEditPerGroupInterval: dispatchers draining at once, as tickets
// keep joining a group, edit its message at most once per
// slack.group_interval between them — here once, after it is posted,
// however many batches touch it.
func TestOneEditPerGroupInterval(t *testing.T) {
	b := setup(t)
	for range 3 {
		b.openTicket(t, "onboarding")
	}
	first := b.boundedDispatcher(t, "d0", 2, time.Hour, nil)
	b.drain(t, first)
	if len(b.groupRoots()) != 1 {
		t.Fatalf("%d group messages, want 1", len(b.groupRoots()))
	}
	var ds []*notify.Dispatcher
	for i := range 3 {
		ds = append(ds, b.dispatcher(t, fmt.Sprintf("d%d", i+1), func(c *slack.Config) {
			c.Composer = slack.TicketComposer{Tickets: c.Tickets}
			c.GroupThreshold, c.GroupDetailLimit, c.GroupInterval, c.BatchSize = 3, 2, time.Hour, 2
		}))
	}
	for range 3 {
		for range 4 {
			b.openTicket(t, "onboarding")
		}
		var wg sync.WaitGroup
		for _, d := range ds {
			wg.Go(func() {
				if _, err := d.Drain(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	g := b.groupRoots()[0]
	if g.Edits != 1 {
		t.Errorf("group message edited %d times within one interval, want 1", g.Edits)
	}
	if got := len(b.fake.Calls("chat.update")); got != 1 {
		t.Errorf("%d chat.update calls, want 1", got)
	}
	var editedAt *time.Time
	if err := b.pool.QueryRow(b.ctx, `SELECT edited_at FROM sweeper.alert_groups WHERE id = $1`, groupID(t, g)).Scan(&editedAt); err != nil || editedAt == nil {
		t.Errorf("the group's last edit not recorded: %v, %v", editedAt, err)
	}
	// Every ticket event is accounted for: posted or folded, none pending.
	var pending int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("%d rows pending (%v), want none", pending, err)
	}
}

// TestGroupEditRefusedIsGivenBack: an edit of a group's message that
// Slack's rate limit refused made no change, so it does not use up the
// interval: the group's last edit stays as it was, and the next flush may
// make it as soon as the channel allows.
func TestGroupEditRefusedIsGivenBack(t *testing.T) {
	b := setup(t)
	d := b.boundedDispatcher(t, "d1", 1, time.Hour, nil)
	for range 3 {
		b.openTicket(t, "onboarding")
	}
	b.fake.Inject("chat.update", slackfake.Fault{Status: 429, RetryAfter: "30"})
	b.drain(t, d)
	g := b.groupRoots()
	if len(g) != 1 || g[0].Edits != 0 || len(b.fake.Calls("chat.update")) != 1 {
		t.Fatalf("%d group messages, %d chat.update calls; want one message and its edit refused", len(g), len(b.fake.Calls("chat.update")))
	}
	var editedAt *time.Time
	if err := b.pool.QueryRow(b.ctx, `SELECT edited_at FROM sweeper.alert_groups WHERE id = $1`, groupID(t, g[0])).Scan(&editedAt); err != nil || editedAt != nil {
		t.Errorf("the group's last edit after a refused one: %v (%v), want none", editedAt, err)
	}
}

// TestContradictionInAFoldedGroupIsPosted: a folded ticket resolved as
// not sent, whose record the provider turns out to hold, gets a message of
// its own: the resolution was folded, the contradiction is not.
func TestContradictionInAFoldedGroupIsPosted(t *testing.T) {
	b := setup(t)
	d := b.boundedDispatcher(t, "d1", 1, time.Hour, nil)
	var ids []int64
	for range 3 {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	b.drain(t, d)
	id := ids[2]
	if n := b.row(t, openedKey(id)); n.State != outbox.StateFolded {
		t.Fatalf("ticket %d's alert %s, want folded", id, n.State)
	}
	store := review.NewStore(b.pool, ledger.Native(), testPolicy)
	if _, err := store.Resolve(b.ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent, By: "cli:alice"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := store.RecordContradiction(b.ctx, id, "rec-found-later", proof.Evidence{}); err != nil || !ok {
		t.Fatalf("record the contradiction: %v, %v", ok, err)
	}
	b.drain(t, d)
	if n := b.row(t, fmt.Sprintf("ticket:%d:resolved", id)); n.State != outbox.StateFolded {
		t.Errorf("the folded ticket's resolution: %s, want folded", n.State)
	}
	m := b.requireOne(t, fmt.Sprintf("ticket:%d:contradicted", id))
	if m.ThreadTS != "" || !strings.Contains(m.Text, "rec-found-later") {
		t.Errorf("the contradiction: %q in thread %q, want a message of its own naming the record", m.Text, m.ThreadTS)
	}
}

// TestAckTimeoutInAFoldedGroupIsPosted: a folded ticket acknowledged and
// forgotten is not folded away when its acknowledgement times out: the
// "ack_timed_out" event gets a message of its own, mentioning the owner and
// saying whose acknowledgement lapsed, while its acknowledgement was
// folded like any other event of a folded ticket.
func TestAckTimeoutInAFoldedGroupIsPosted(t *testing.T) {
	b := setup(t)
	d := b.boundedDispatcher(t, "d1", 1, time.Hour, nil)
	var ids []int64
	for range 3 {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	b.drain(t, d)
	id := ids[2]
	if n := b.row(t, openedKey(id)); n.State != outbox.StateFolded {
		t.Fatalf("ticket %d's alert %s, want folded", id, n.State)
	}
	store := review.NewStore(b.pool, ledger.Native(), testPolicy)
	if _, err := store.Acknowledge(b.ctx, id, "slack:U0ACK777", 0); err != nil {
		t.Fatal(err)
	}
	et, err := store.EscalationTicket(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	policy := review.Escalation{FirstWindow: time.Hour, FirstAckTimeout: time.Minute}
	step := policy.Next(et.EscalationState, et.AcknowledgedAt.Add(time.Minute))
	if step.Kind != review.EscalationAckTimedOut {
		t.Fatalf("step %q, want %q", step.Kind, review.EscalationAckTimedOut)
	}
	details := review.AckTimedOutDetails{Level: 0, AcknowledgedBy: et.AcknowledgedBy, AcknowledgedAt: et.AcknowledgedAt,
		AckTimeoutSeconds: 60, Lapse: step.AckLapses, Owner: step.Owner, Priority: step.Priority, Deadline: step.Deadline}
	if ok, err := store.Escalate(b.ctx, et, step, details, nil); err != nil || !ok {
		t.Fatalf("time the acknowledgement out: %v, %v", ok, err)
	}
	b.drain(t, d)
	if n := b.row(t, fmt.Sprintf("ticket:%d:acknowledged:0", id)); n.State != outbox.StateFolded {
		t.Errorf("the folded ticket's acknowledgement: %s, want folded", n.State)
	}
	m := b.requireOne(t, step.DedupeKey(id))
	if m.ThreadTS != "" || !strings.Contains(m.Text, "acknowledged by <@U0ACK777> at level 0, still open after 1m: escalation resumes") ||
		!strings.Contains(m.Text, "<@"+et.Owner+">") {
		t.Errorf("the ack timeout: %q in thread %q, want a message of its own mentioning the owner", m.Text, m.ThreadTS)
	}
}
