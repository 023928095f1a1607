package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/sweeper/sweeper/internal/app"
	"github.com/sweeper/sweeper/notify/outbox"
)

// TestReceiverOffSkipsItsRows: rows a ticket owes a receiver that is not
// configured (routes written by another configuration, or a receiver
// turned off since the ticket reached it) are recorded skipped
// (no_receiver) by the delivery pass, never left pending; Slack's rows go
// their own way.
func TestReceiverOffSkipsItsRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, baseConfig, nil)
	routes := []outbox.Route{{Receiver: outbox.ReceiverPagerDuty}, {Receiver: outbox.ReceiverWebhook}, {Receiver: outbox.ReceiverSlack}}
	if _, err := outbox.NewStore(b.pool).SetRoutes(ctx, routes); err != nil {
		t.Fatal(err)
	}
	b.claim(t, "many-1", "sim", time.Hour)
	if sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil || sum.Tickets["multiple_matches"] != 1 {
		t.Fatalf("sweep: %+v, %v", sum, err)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE receiver <> 'slack'`); n != 2 {
		t.Fatalf("%d rows for PagerDuty and the webhook, want 2", n)
	}
	got, err := b.sweeper.Deliver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE receiver <> 'slack' AND state = 'skipped' AND error_code = $1`, outbox.CodeNoReceiver); n != 2 || got.Left != 0 {
		t.Errorf("%d of 2 rows skipped (no_receiver), %d left; want both skipped, none left", n, got.Left)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`); n != 0 {
		t.Errorf("%d rows pending", n)
	}
}
