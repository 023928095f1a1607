package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
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
	if _, err := outbox.NewRoutes(b.pool).SetRoutes(ctx, routes); err != nil {
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

// TestRoutesConflictIsReported (I9): two replicas whose [[routes]] differ.
// The one that starts last writes its routes, with a WARN naming both
// lists; the other sees, at its next check, that the stored routes are no
// longer its own — sweeper_routes_conflict 1 and one WARN, however often
// it checks — until they are its own again.
func TestRoutesConflictIsReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := setup(t, baseConfig, nil)
	second := first.replica(t, nil)
	second.sweeper.Config.Routes = []config.RouteEntry{{Receiver: outbox.ReceiverSlack, Provider: "sim"}}
	var firstLog, secondLog lockedBuffer
	first.sweeper.Logger = slog.New(slog.NewTextHandler(&firstLog, &slog.HandlerOptions{Level: slog.LevelWarn}))
	second.sweeper.Logger = slog.New(slog.NewTextHandler(&secondLog, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conflict := func(s *app.App) string {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(s.StartCollector())
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "sweeper_routes_conflict" {
				return fmt.Sprint(f.GetMetric()[0].GetGauge().GetValue())
			}
		}
		return "absent"
	}

	if err := first.sweeper.WriteRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.sweeper.CheckRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := conflict(first.sweeper); got != "0" || firstLog.String() != "" {
		t.Fatalf("first replica alone: conflict %s, log %q; want 0 and nothing", got, firstLog.String())
	}
	if err := second.sweeper.WriteRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := conflict(second.sweeper); got != "0" {
		t.Errorf("the replica that wrote last: conflict %s, want 0", got)
	}
	if !strings.Contains(secondLog.String(), "the stored routes differ from this replica's [[routes]]") ||
		!strings.Contains(secondLog.String(), `provider = \"sim\" -> slack`) {
		t.Errorf("the replica that replaced the routes did not warn, naming both lists:\n%s", secondLog.String())
	}
	stored, err := outbox.NewRoutes(first.pool).Routes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []outbox.Route{{Receiver: outbox.ReceiverSlack, Provider: "sim"}}; !slices.Equal(stored, want) {
		t.Errorf("stored routes %v, want the last starter's %v", stored, want)
	}
	for range 3 {
		if err := first.sweeper.CheckRoutes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := conflict(first.sweeper); got != "1" {
		t.Errorf("the replica whose routes were replaced: conflict %s, want 1", got)
	}
	if n := strings.Count(firstLog.String(), "level=WARN"); n != 1 ||
		!strings.Contains(firstLog.String(), "no longer this replica's [[routes]]") {
		t.Errorf("%d WARN line(s) on the replica whose routes were replaced; want one saying so:\n%s", n, firstLog.String())
	}
	// The first replica restarts: its routes are the stored ones again.
	if err := first.sweeper.WriteRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := conflict(first.sweeper); got != "0" {
		t.Errorf("after the first replica wrote again: conflict %s, want 0", got)
	}
}

// String is what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
