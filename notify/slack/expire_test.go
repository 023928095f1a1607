package slack_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/review"
)

const expiredReason = "expired: older than slack.max_alert_age (24h); not posted — see sweeper tickets list"

// age sets when the outbox row of dedupeKey was written.
func (b *bundle) age(t *testing.T, dedupeKey string, ago time.Duration) {
	t.Helper()
	if _, err := b.pool.Exec(b.ctx, `UPDATE sweeper.outbox SET created_at = now() - make_interval(secs => $2)
		WHERE dedupe_key = $1`, dedupeKey, ago.Seconds()); err != nil {
		t.Fatal(err)
	}
}

// requireExpired checks that the row of dedupeKey is parked as expired and
// that Slack has no message for it.
func (b *bundle) requireExpired(t *testing.T, dedupeKey string) {
	t.Helper()
	if n := b.row(t, dedupeKey); n.State != outbox.StateParked || n.LastError != expiredReason || n.Reference != "" {
		t.Errorf("%s: %s, ts %q, last_error %q; want parked, unposted, %q", dedupeKey, n.State, n.Reference, n.LastError, expiredReason)
	}
	if msgs := b.fake.WithKey(dedupeKey); len(msgs) > 0 {
		t.Errorf("%s: posted although expired: %+v", dedupeKey, msgs)
	}
}

// TestDispatchExpiresOldAlerts: rows written while Slack was off, two days
// ago, are parked unposted by the first pass once it is on; a fresh row
// goes out.
func TestDispatchExpiresOldAlerts(t *testing.T) {
	const twoDays = 48 * time.Hour
	tests := []struct {
		desc string
		// maxAge is DispatcherConfig.MaxAge.
		maxAge time.Duration
		// old and fresh tickets: an old one has its root and one reply
		// written two days ago.
		old, fresh int
		wantStats  notify.Stats
		wantCounts map[string]int
	}{
		{desc: "a backlog of old alerts", maxAge: 24 * time.Hour, old: 3,
			wantStats:  notify.Stats{Claimed: 3, Expired: 6},
			wantCounts: map[string]int{outbox.StatePending: 0, outbox.StateSent: 0, outbox.StateParked: 6}},
		{desc: "old alerts and a fresh one", maxAge: 24 * time.Hour, old: 2, fresh: 1,
			wantStats:  notify.Stats{Claimed: 3, Sent: 1, Expired: 4},
			wantCounts: map[string]int{outbox.StatePending: 0, outbox.StateSent: 1, outbox.StateParked: 4}},
		{desc: "no age limit", maxAge: 0, old: 1, fresh: 1,
			wantStats:  notify.Stats{Claimed: 2, Sent: 2},
			wantCounts: map[string]int{outbox.StatePending: 1, outbox.StateSent: 2, outbox.StateParked: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			b := setup(t)
			var oldKeys, freshKeys []string
			for range tt.old {
				id := b.openTicket(t, "billing")
				reply := b.event(t, id, review.EventEscalated, "escalated:1")
				for _, key := range []string{openedKey(id), reply} {
					b.age(t, key, twoDays)
					oldKeys = append(oldKeys, key)
				}
			}
			for range tt.fresh {
				freshKeys = append(freshKeys, openedKey(b.openTicket(t, "onboarding")))
			}
			d := b.dispatcher(t, "d1", func(c *slack.Config) { c.MaxAge = tt.maxAge })

			st, err := d.DispatchOnce(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantStats, st); diff != "" {
				t.Errorf("one pass (-want +got):\n%s", diff)
			}
			for _, key := range freshKeys {
				b.requireOne(t, key)
			}
			if tt.maxAge > 0 {
				for _, key := range oldKeys {
					b.requireExpired(t, key)
				}
			}
			counts, err := b.outbox.Counts(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantCounts, counts); diff != "" {
				t.Errorf("outbox rows by state (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDispatchExpiredReplay: a person replays an expired row on purpose;
// it is posted, not expired again. A fresh reply behind an expired root
// waits for the root.
func TestDispatchExpiredReplay(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) { c.MaxAge = 24 * time.Hour })
	id := b.openTicket(t, "billing")
	root := openedKey(id)
	b.age(t, root, 48*time.Hour)
	reply := b.event(t, id, review.EventEscalated, "escalated:1") // fresh

	if st := b.drain(t, d); st.Expired != 1 || st.Sent != 0 {
		t.Fatalf("first drain: %+v, want the root expired and nothing sent", st)
	}
	b.requireExpired(t, root)
	if n := b.row(t, reply); n.State != outbox.StatePending {
		t.Errorf("the fresh reply is %s, want pending behind its root", n.State)
	}

	if _, err := b.outbox.Replay(b.ctx, b.row(t, root).ID, "ops-alice"); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, d); st.Sent != 2 || st.Expired != 0 {
		t.Fatalf("after the replay: %+v, want the root and the reply sent", st)
	}
	b.requireOne(t, root)
	b.requireOne(t, reply)
}
