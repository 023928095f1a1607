package webhook_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// recorder is a receiver of one method, as small as a receiver can be:
// it records each row it is handed and delivers it.
type recorder struct {
	mu   sync.Mutex
	rows []outbox.Notification
}

func (r *recorder) Deliver(_ context.Context, n *outbox.Notification, _ *slog.Logger) (notify.Delivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, *n)
	n.Destination = "hook"
	return notify.Delivery{Reference: n.DedupeKey, Posted: true}, nil
}

// TestAnyReceiverIsGrouped: alert groups are the dispatcher's decision,
// not Slack's: a receiver that only delivers, behind a dispatcher with a
// Grouper, gets the group's own row first, then the alerts of the first
// tickets up to the detail limit; the others are folded into the group,
// never handed to it. Slack's rows are untouched.
func TestAnyReceiverIsGrouped(t *testing.T) {
	b := setup(t)
	var ids []int64
	for range 4 {
		ids = append(ids, b.open(t))
	}
	tickets := review.NewReader(b.pool, ledger.Native())
	g, err := notify.NewGrouper(b.pool, outbox.ReceiverWebhook, tickets, notify.GroupConfig{
		Threshold: 3, DetailLimit: 1, Interval: time.Minute,
		Destination: func(workflow, provider string) string { return "hook" },
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	d, err := notify.NewDispatcher(b.pool, rec, notify.DispatcherConfig{
		Tickets: tickets, Receiver: outbox.ReceiverWebhook, Grouper: g, ID: "g1",
		Backoff: func(int) time.Duration { return 0 },
		Logger:  slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Drain(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != 2 || st.Folded != 3 {
		t.Errorf("drained %+v; want the group's row and one ticket's alert sent, three folded", st)
	}
	if len(rec.rows) != 2 || rec.rows[0].Kind != outbox.KindGroupOpened || rec.rows[0].GroupID == 0 ||
		rec.rows[1].Kind != outbox.KindOpened || rec.rows[1].GroupID != rec.rows[0].GroupID {
		t.Fatalf("handed %+v; want the group's row, then one alert of its group", rec.rows)
	}
	folded := 0
	for _, id := range ids {
		for _, n := range b.rows(t, id) {
			if n.GroupID != rec.rows[0].GroupID {
				t.Errorf("ticket %d's row %d in group %d, want %d", id, n.ID, n.GroupID, rec.rows[0].GroupID)
			}
			if n.State == outbox.StateFolded {
				folded++
			}
		}
		slack, err := outbox.NewStore(b.pool).List(b.ctx, outbox.Filter{TicketID: id, Receiver: outbox.ReceiverSlack})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range slack {
			if n.GroupID != 0 || n.State != outbox.StatePending {
				t.Errorf("Slack's row %d of ticket %d: %+v; want it untouched by the webhook's groups", n.ID, id, n)
			}
		}
	}
	if folded != 3 {
		t.Errorf("%d rows folded, want 3", folded)
	}
}
