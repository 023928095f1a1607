package slack_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goslack "github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// requireNothingPending fails when any outbox row is still pending.
func (b *bundle) requireNothingPending(t *testing.T) {
	t.Helper()
	list, err := b.outbox.List(b.ctx, outbox.Filter{State: outbox.StatePending})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		t.Errorf("row %d (%s) still pending: attempts %d, last error %q", n.ID, n.DedupeKey, n.Attempts, n.LastError)
	}
}

// dropFirstPost makes the next post reach Slack and lose its answer, runs
// one dispatch, and checks that the attempt was uncertain.
func (b *bundle) dropFirstPost(t *testing.T, d *notify.Dispatcher) {
	t.Helper()
	b.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
	if st, err := d.DispatchOnce(b.ctx); err != nil || st.Uncertain != 1 {
		t.Fatalf("dropped post: %+v, %v; want one uncertain attempt", st, err)
	}
}

// TestUncertainSearchIsBoundedByItsWindow: after a post whose answer was
// lost, the search reads only the channel (or thread) between the
// attempt's claim and the end of its lease. Later chatter, however much,
// is out of its way; a window that itself holds more than a search reads is
// retried once it has closed, then parked for a person, counted, and the
// ticket's next message goes out as a new root meanwhile.
func TestUncertainSearchIsBoundedByItsWindow(t *testing.T) {
	tests := []struct {
		desc  string
		reply bool
		// chatter messages follow the dropped post: after its window (Slack's
		// clock moved on ten minutes), or at once, inside it.
		chatter int
		later   bool
		// pages is SearchPages; closed waits for the window to close before
		// the second attempt.
		pages  int
		closed bool
		want   string
	}{
		{desc: "root, 4200 messages after its window", chatter: 4200, later: true, want: "adopted"},
		{desc: "reply, 4200 replies after its window", reply: true, chatter: 4200, later: true, want: "adopted"},
		{desc: "more in the open window than a search reads", chatter: 250, pages: 1, want: "retried"},
		{desc: "more in the closed window than a search reads", chatter: 250, pages: 1, closed: true, want: "parked"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			b := setup(t)
			reg := prometheus.NewRegistry()
			m, err := metrics.New(reg, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := b.dispatcher(t, "d1", func(c *slack.Config) {
				c.SearchPages = tt.pages
				c.Metrics = m
				if tt.closed {
					c.Lease, c.SearchMargin = time.Second, 10*time.Millisecond
				}
			})
			id := b.openTicket(t, "onboarding")
			key, thread := openedKey(id), ""
			if tt.reply {
				b.drain(t, d)
				thread = b.requireOne(t, key).TS
				key = b.event(t, id, review.EventAcknowledged, "acknowledged:1")
			}
			b.dropFirstPost(t, d)
			if tt.later {
				b.fake.Advance(10 * time.Minute)
			}
			for i := range tt.chatter {
				b.fake.Add(slackfake.Message{Channel: alertsChannel, ThreadTS: thread, Text: fmt.Sprintf("chatter %d", i)})
			}
			if tt.closed {
				time.Sleep(time.Until(b.row(t, key).SearchWindows[0].Until.Add(50 * time.Millisecond))) // the window closes: the scenario
			}
			searches := len(b.fake.Calls("conversations.history")) + len(b.fake.Calls("conversations.replies"))
			st, err := d.DispatchOnce(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			searches = len(b.fake.Calls("conversations.history")) + len(b.fake.Calls("conversations.replies")) - searches
			for _, c := range append(b.fake.Calls("conversations.history"), b.fake.Calls("conversations.replies")...) {
				if c.Form["oldest"] == nil || c.Form["latest"] == nil {
					t.Errorf("%s without oldest and latest: %v", c.Method, c.Form)
				}
			}
			n := b.row(t, key)
			switch tt.want {
			case "adopted":
				if st.Adopted != 1 || searches != 1 {
					t.Errorf("stats %+v after %d search calls; want adopted after one page", st, searches)
				}
				b.requireOne(t, key)
			case "retried":
				if st.Failed != 1 || n.State != outbox.StatePending || n.ErrorCode != "" || !strings.Contains(n.LastError, "inconclusive") {
					t.Errorf("stats %+v, row %s %q; want a failed attempt, pending", st, n.State, n.LastError)
				}
				if closes := n.SearchWindows[0].Until; n.LeaseUntil.Before(closes) {
					t.Errorf("retry due %s, before the window closes at %s", n.LeaseUntil, closes)
				}
			case "parked":
				if st.Parked != 1 || st.Inconclusive != 1 || n.State != outbox.StateParked || n.ErrorCode != outbox.CodeSearchInconclusive {
					t.Fatalf("stats %+v, row %s %s; want parked, search_inconclusive", st, n.State, n.ErrorCode)
				}
				for _, want := range []string{alertsChannel, "sweeper outbox dismiss", "--not-posted"} {
					if !strings.Contains(n.LastError, want) {
						t.Errorf("the reason does not say %q: %s", want, n.LastError)
					}
				}
				if got := metricstest.NonZero(t, reg, "sweeper_slack_search_inconclusive_total"); got[""] != 1 {
					t.Errorf("inconclusive searches counted: %v, want 1", got)
				}
				// The ticket's next message is not held back: it is the new root.
				next := b.event(t, id, review.EventEscalated, "escalated:1")
				b.drain(t, d)
				if m := b.requireOne(t, next); m.ThreadTS != "" {
					t.Errorf("the escalation after a parked root went to thread %s, want a new root", m.ThreadTS)
				}
				// The person finds the alert in Slack and closes the row.
				if _, err := b.outbox.Dismiss(b.ctx, n.ID, "ops-alice", "found in the channel"); err != nil {
					t.Fatal(err)
				}
				b.requireNothingPending(t)
			}
			if got := len(b.fake.WithKey(key)); got != 1 {
				t.Errorf("%d messages for %s, want 1", got, key)
			}
		})
	}
}

// TestReplayNotPostedPostsWithoutSearching: a person found that the
// message of a row parked after an inconclusive search is not in Slack;
// the replay posts it, once, without searching again.
func TestReplayNotPostedPostsWithoutSearching(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.SearchPages, c.Lease, c.SearchMargin = 1, time.Second, 10*time.Millisecond
	})
	id := b.openTicket(t, "onboarding")
	b.fake.Inject("chat.postMessage", slackfake.Fault{Status: 503}) // not taken
	if st, _ := d.DispatchOnce(b.ctx); st.Uncertain != 1 {
		t.Fatalf("first attempt %+v, want uncertain", st)
	}
	for i := range 250 {
		b.fake.Add(slackfake.Message{Channel: alertsChannel, Text: fmt.Sprintf("chatter %d", i)})
	}
	time.Sleep(time.Until(b.row(t, openedKey(id)).SearchWindows[0].Until.Add(50 * time.Millisecond))) // the window closes: the scenario
	if st := b.drain(t, d); st.Parked != 1 {
		t.Fatalf("second attempt %+v, want parked", st)
	}
	n := b.row(t, openedKey(id))
	if _, err := b.outbox.Replay(b.ctx, n.ID, "ops-alice"); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, d); st.Parked != 1 {
		t.Fatalf("a plain replay: %+v, want parked again (the same window, as inconclusive)", st)
	}
	searches := len(b.fake.Calls("conversations.history"))
	replayed, err := b.outbox.ReplayNotPosted(b.ctx, n.ID, "ops-alice")
	if err != nil || len(replayed.SearchWindows) != 0 {
		t.Fatalf("replay not posted: %+v, %v", replayed, err)
	}
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("after the replay: %+v, want sent", st)
	}
	b.requireOne(t, openedKey(id))
	if got := len(b.fake.Calls("conversations.history")); got != searches {
		t.Errorf("%d searches after the person said it is not posted", got-searches)
	}
	if h := string(b.row(t, openedKey(id)).History); !strings.Contains(h, "who found the message not posted") {
		t.Errorf("history does not say who vouched: %s", h)
	}
}

// TestOKWithoutTSIsUncertain: Slack takes the post and answers ok without
// its ts. The attempt is uncertain, never sent; the next one finds the
// message and records its ts, and the thread goes on under it.
func TestOKWithoutTSIsUncertain(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		reply bool
	}{
		{desc: "root message"},
		{desc: "thread reply", reply: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := setup(t)
			d := b.dispatcher(t, "d1", nil)
			id := b.openTicket(t, "onboarding")
			key := openedKey(id)
			if tc.reply {
				b.drain(t, d)
				key = b.event(t, id, review.EventEscalated, "escalated:1")
			}
			b.fake.Inject("chat.postMessage", slackfake.Fault{Apply: true, Omit: []string{"ts", "message"}})
			st, err := d.DispatchOnce(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := b.row(t, key); st.Uncertain != 1 || n.State != outbox.StatePending || n.Reference != "" || len(n.SearchWindows) != 1 {
				t.Fatalf("stats %+v, row %s ts %q windows %v; want uncertain, pending, no ts, one window", st, n.State, n.Reference, n.SearchWindows)
			}
			if st := b.drain(t, d); st.Adopted != 1 {
				t.Errorf("second attempt: %+v, want adopted", st)
			}
			m := b.requireOne(t, key)
			if tc.reply {
				root := b.requireOne(t, openedKey(id))
				if m.ThreadTS != root.TS || root.Edits != 1 {
					t.Errorf("reply in thread %q, root %s edited %d times", m.ThreadTS, root.TS, root.Edits)
				}
				return
			}
			reply := b.event(t, id, review.EventEscalated, "escalated:1")
			b.drain(t, d)
			if r := b.requireOne(t, reply); r.ThreadTS != m.TS {
				t.Errorf("the next reply went to thread %q, want %s", r.ThreadTS, m.TS)
			}
		})
	}
}

// TestRemovedRootIsReplaced: a person deleted the ticket's root message.
// The next reply gets thread_not_found, an edit message_not_found (Slack
// keeps a deleted root with replies as a tombstone): either way a new root
// with the ticket's current state goes out, once, recorded in the outbox,
// and the thread continues under it.
func TestRemovedRootIsReplaced(t *testing.T) {
	for _, tc := range []struct {
		desc string
		// tombstone leaves the root in the fake and makes its edit answer
		// message_not_found; otherwise the root is deleted.
		tombstone bool
	}{
		{desc: "reply to a deleted root"},
		{desc: "edit of a deleted root", tombstone: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := setup(t)
			d := b.dispatcher(t, "d1", nil)
			id := b.openTicket(t, "onboarding")
			b.drain(t, d)
			old := b.requireOne(t, openedKey(id))
			if tc.tombstone {
				b.fake.Inject("chat.update", slackfake.Fault{Error: "message_not_found"})
			} else if !b.fake.Delete(old.Channel, old.TS) {
				t.Fatal("no root to delete")
			}
			escalated := b.event(t, id, review.EventEscalated, "escalated:1")
			st := b.drain(t, d)
			if st.Parked != 0 {
				t.Fatalf("stats %+v: a removed root parked a row", st)
			}
			if n := b.row(t, openedKey(id)); n.RemovedAt == nil {
				t.Errorf("the old root's row is not marked removed: %+v", n)
			}
			// The new root: the escalation itself, or the event recording the removal.
			newKey := escalated
			if tc.tombstone {
				newKey = fmt.Sprintf("ticket:%d:%s:%s", id, outbox.KindRootRemoved, old.TS)
			}
			root := b.requireOne(t, newKey)
			if root.ThreadTS != "" {
				t.Errorf("new root %s in thread %s", newKey, root.ThreadTS)
			}
			if e := b.fake.WithKey(escalated); len(e) != 1 {
				t.Errorf("%d messages for the escalation, want 1", len(e))
			}
			// Replays and retries add no other root.
			b.drain(t, d)
			acked := b.event(t, id, review.EventAcknowledged, "acknowledged:1")
			b.drain(t, d)
			if m := b.requireOne(t, acked); m.ThreadTS != root.TS {
				t.Errorf("the next reply went to thread %q, want the new root %s", m.ThreadTS, root.TS)
			}
			if r := b.fake.WithKey(newKey)[0]; r.Edits != 1 {
				t.Errorf("new root edited %d times, want 1 (by the acknowledgement)", r.Edits)
			}
			tops := 0
			for _, m := range b.fake.Messages() {
				if m.ThreadTS == "" || m.ThreadTS == m.TS {
					tops++
				}
			}
			if want := map[bool]int{false: 1, true: 2}[tc.tombstone]; tops != want {
				t.Errorf("%d root messages in Slack, want %d", tops, want)
			}
			b.requireNothingPending(t)
		})
	}
}

// TestReplayRoutesAgain: a root parked on channel_not_found holds its
// ticket's replies back; once slack.channel is corrected, the replay posts
// it to the channel configured now, and the replies follow in its thread.
func TestReplayRoutesAgain(t *testing.T) {
	b := setup(t)
	b.fake.DeleteChannel("C0WRONG")
	wrong := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Channel = slack.Channels{Default: "C0WRONG"}.For
	})
	id := b.openTicket(t, "onboarding")
	if st := b.drain(t, wrong); st.Parked != 1 {
		t.Fatalf("stats %+v, want parked", st)
	}
	root := b.row(t, openedKey(id))
	if root.ErrorCode != "channel_not_found" {
		t.Fatalf("parked with code %q, want channel_not_found", root.ErrorCode)
	}
	reply := b.event(t, id, review.EventEscalated, "escalated:1")
	if st := b.drain(t, wrong); st.Claimed != 0 {
		t.Fatalf("claimed %+v behind a root parked on its channel", st)
	}

	fixed := b.dispatcher(t, "d2", nil) // slack.channel corrected, the daemon restarted
	if _, err := b.outbox.Replay(b.ctx, root.ID, "ops-alice"); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, fixed); st.Sent != 2 {
		t.Fatalf("after the replay: %+v, want root and reply sent", st)
	}
	m := b.requireOne(t, openedKey(id))
	if m.Channel != alertsChannel {
		t.Errorf("replayed root in %s, want %s", m.Channel, alertsChannel)
	}
	if r := b.requireOne(t, reply); r.ThreadTS != m.TS {
		t.Errorf("reply in thread %q, want %s", r.ThreadTS, m.TS)
	}
}

// TestRevokedTokenBulkReplay: a revoked token parks each ticket's root;
// their replies wait. With a new token, one replay of every row parked on
// token_revoked delivers everything once; rows parked for their age stay
// unless asked for by code.
func TestRevokedTokenBulkReplay(t *testing.T) {
	b := setup(t)
	b.fake.Revoke(slackfake.Token)
	var keys []string
	for range 3 {
		id := b.openTicket(t, "onboarding")
		keys = append(keys, openedKey(id), b.event(t, id, review.EventEscalated, "escalated:1"))
	}
	old := b.openTicket(t, "onboarding")
	b.age(t, openedKey(old), 48*time.Hour)
	aged := b.dispatcher(t, "d0", func(c *slack.Config) { c.MaxAge = 24 * time.Hour })
	if st := b.drain(t, aged); st.Parked != 3 || st.Expired != 1 {
		t.Fatalf("stats %+v, want three parked, one expired", st)
	}

	b.fake.Accept("xoxb-slackfake-reissued")
	d := b.dispatcher(t, "d2", func(c *slack.Config) { c.Token = "xoxb-slackfake-reissued" })
	replayed, err := b.outbox.ReplayParked(b.ctx, "token_revoked", "ops-alice")
	if err != nil || len(replayed) != 3 {
		t.Fatalf("replayed %d rows, %v; want 3", len(replayed), err)
	}
	if st := b.drain(t, d); st.Sent != 6 {
		t.Fatalf("after the replay: %+v, want six sent", st)
	}
	for _, key := range keys {
		b.requireOne(t, key)
	}
	if n := b.row(t, openedKey(old)); n.State != outbox.StateParked {
		t.Errorf("the expired row is %s after a replay by token_revoked", n.State)
	}
	if again, err := b.outbox.ReplayParked(b.ctx, "", "ops-alice"); err != nil || len(again) != 0 {
		t.Errorf("a replay of every code replayed %d rows (%v): expired rows are replayed by their code only", len(again), err)
	}
	b.requireNothingPending(t)
}

// TestDismiss: a parked row can be closed for good, with who and why in
// its history; only a parked row. A dismissed root holds nothing back: the
// ticket's next message is a new root.
func TestDismiss(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", nil)
	id := b.openTicket(t, "onboarding")
	b.fake.Inject("chat.postMessage", slackfake.Fault{Error: "channel_not_found"})
	if st := b.drain(t, d); st.Parked != 1 {
		t.Fatalf("stats %+v, want parked", st)
	}
	n := b.row(t, openedKey(id))
	dismissed, err := b.outbox.Dismiss(b.ctx, n.ID, "ops-alice", "channel archived for good")
	if err != nil || dismissed.State != outbox.StateDismissed {
		t.Fatalf("dismiss: %+v, %v", dismissed, err)
	}
	for _, want := range []string{`"dismissed"`, `"ops-alice"`, "channel archived for good"} {
		if !strings.Contains(string(dismissed.History), want) {
			t.Errorf("history lacks %s: %s", want, dismissed.History)
		}
	}
	if _, err := b.outbox.Dismiss(b.ctx, n.ID, "ops-alice", "again"); !errors.Is(err, outbox.ErrNotParked) {
		t.Errorf("dismissing a dismissed row: %v, want ErrNotParked", err)
	}
	if _, err := b.outbox.Replay(b.ctx, n.ID, "ops-alice"); !errors.Is(err, outbox.ErrNotParked) {
		t.Errorf("replaying a dismissed row: %v, want ErrNotParked", err)
	}
	next := b.event(t, id, review.EventEscalated, "escalated:1")
	b.drain(t, d)
	if m := b.requireOne(t, next); m.ThreadTS != "" {
		t.Errorf("the escalation after a dismissed root went to thread %s, want a new root", m.ThreadTS)
	}
	if counts, _ := b.outbox.Counts(b.ctx); counts[outbox.StateDismissed] != 1 || counts[outbox.StateParked] != 0 {
		t.Errorf("counts %v", counts)
	}
}

// TestMessageRefusedRootHoldsNothingBack: a root Slack refused for its own
// content parks alone; the ticket's next message is a new root.
func TestMessageRefusedRootHoldsNothingBack(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", nil)
	id := b.openTicket(t, "onboarding")
	b.fake.Inject("chat.postMessage", slackfake.Fault{Error: "invalid_blocks"})
	reply := b.event(t, id, review.EventEscalated, "escalated:1")
	st := b.drain(t, d)
	if st.Parked != 1 || st.Sent != 1 {
		t.Fatalf("stats %+v, want the root parked and the escalation sent", st)
	}
	if m := b.requireOne(t, reply); m.ThreadTS != "" {
		t.Errorf("escalation in thread %q, want a new root", m.ThreadTS)
	}
	b.requireNothingPending(t)
}

// TestLostHolderWindowEndsWithItsLease: a dispatcher dies after Slack took
// its post; the row is claimed again later, after chatter. The window to
// search is the lost holder's claim to the end of its lease, not up to the
// new claim: the chatter since is out of the search's way.
func TestLostHolderWindowEndsWithItsLease(t *testing.T) {
	b := setup(t)
	id := b.openTicket(t, "onboarding")
	claimed, err := b.outbox.Claim(b.ctx, "killed", 200*time.Millisecond, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	// What the killed dispatcher managed to do: post, with the key.
	client := goslack.New(slackfake.Token, goslack.OptionAPIURL(b.fake.URL()))
	if _, _, err := client.PostMessage(alertsChannel, goslack.MsgOptionText("opened", false),
		goslack.MsgOptionMetadata(goslack.SlackMetadata{EventType: "sweeper_ticket",
			EventPayload: map[string]any{"dedupe_key": openedKey(id), "ticket_id": id}})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the lease ends
	for i := range 300 {
		b.fake.Add(slackfake.Message{Channel: alertsChannel, Text: fmt.Sprintf("chatter %d", i)})
	}
	d := b.dispatcher(t, "d1", func(c *slack.Config) { c.SearchPages, c.SearchMargin = 1, 10*time.Millisecond })
	st := b.drain(t, d)
	if st.Adopted != 1 {
		t.Errorf("stats %+v, want adopted after one page", st)
	}
	b.requireOne(t, openedKey(id))
}
