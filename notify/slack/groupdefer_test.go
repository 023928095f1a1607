package slack_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/slack"
)

// syncBuffer is a log's output, written by concurrent deliveries.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestGroupDecisionOutOfTimeWaitsForTheNextPass: a group decision that
// cannot be made in time — another holds the decision's lock past the
// decision's own budget, or the pass's time runs out while it waits —
// leaves its row pending and unattempted for the next pass, counted in
// sweeper_notify_group_deferred_total by reason, and logs no line per
// row; once the lock is free the next pass delivers the rows.
func TestGroupDecisionOutOfTimeWaitsForTheNextPass(t *testing.T) {
	b := setup(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	dispatcher := func(id string, budget time.Duration) *notify.Dispatcher {
		return b.dispatcher(t, id, func(c *slack.Config) {
			c.Composer = slack.TicketComposer{Tickets: c.Tickets}
			c.GroupThreshold = 3
			c.Metrics = m
			c.PrepareTimeout = budget
			c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		})
	}
	for range 3 {
		b.openTicket(t, "onboarding")
	}
	// Another dispatcher's decision on the same channel, provider and
	// reason holds the lock.
	tx, err := b.pool.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(b.ctx))
	if _, err := tx.Exec(b.ctx, `SELECT pg_advisory_xact_lock(hashtext('sweeper.alert_group'), hashtext($1 || ' ' || $2 || ' ' || $3))`,
		alertsChannel, "mailer", "not_found"); err != nil {
		t.Fatal(err)
	}

	st, err := dispatcher("d1", 100*time.Millisecond).DispatchOnce(b.ctx)
	if err != nil || st.Claimed != 3 || st.Released != 3 || st.Sent != 0 {
		t.Fatalf("with the lock held past the decision's budget: %+v, %v; want 3 claimed, 3 released", st, err)
	}
	// The pass's own time runs out while a decision with a longer budget
	// waits: the rest of the batch is not decided at all.
	pass, cancel := context.WithTimeout(b.ctx, time.Second)
	defer cancel()
	if _, err := b.pool.Exec(b.ctx, `UPDATE sweeper.outbox SET lease_until = now() WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
	st, err = dispatcher("d2", time.Minute).DispatchOnce(pass)
	if err != nil || st.Claimed != 3 || st.Released != 3 || st.Sent != 0 {
		t.Fatalf("with the pass's time running out: %+v, %v; want 3 claimed, 3 released", st, err)
	}
	got := metricstest.NonZero(t, reg, "sweeper_notify_group_deferred_total")
	if got["reason=timeout"] != 3 || got["reason=pass_ended"] != 3 {
		t.Errorf("sweeper_notify_group_deferred_total = %v; want 3 timeout (the first pass), 3 pass_ended (the second)", got)
	}
	if out := logs.String(); strings.Contains(out, "could not decide") || strings.Contains(out, "deadline exceeded") || strings.Count(out, "level=") > 2 {
		t.Errorf("log %q: want at most a line per pass, no line per row", out)
	}
	list, err := b.outbox.List(b.ctx, outbox.Filter{State: outbox.StatePending})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		if n.Attempts != 0 || n.GroupID != 0 || n.LastError != "" {
			t.Errorf("row %d: %d attempts, group %d, error %q; want untouched", n.ID, n.Attempts, n.GroupID, n.LastError)
		}
	}

	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE sweeper.outbox SET lease_until = now() WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, dispatcher("d3", time.Minute)); st.Sent != 4 {
		t.Fatalf("with the lock free: %+v, want the group's message and its 3 alerts sent", st)
	}
}
