package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
)

// TestSlackOffSkipsTheOutbox: with slack.channel empty the daemon still
// dispatches the outbox, to nowhere. A ticket's alert and an incident's
// rows are recorded skipped (no_receiver) and counted, none stays pending,
// and the pending-age gauges stay at zero: the alert on them means a Slack
// that is configured and not delivering.
func TestSlackOffSkipsTheOutbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, baseConfig, nil)
	events := b.countEvents(t)
	b.claim(t, "many-1", "sim", stale)
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, []string{"many-1"}, 60*time.Second)
	if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.provider_health (provider, state, since) VALUES ('sim', 'down', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE sweeper.provider_health SET state = 'up', since = now() WHERE provider = 'sim'`); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE incident_id IS NOT NULL`); n != 2 {
		t.Fatalf("%d outbox rows of the incident, want 2 (its start and its end)", n)
	}
	rows := b.count(t, `SELECT count(*) FROM sweeper.outbox`)
	if rows < 3 {
		t.Fatalf("%d outbox rows, want the ticket's alert and the incident's two", rows)
	}

	if _, err := client.Insert(ctx, jobs.NotifyArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("outbox rows still pending with Slack off")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = $1 AND error_code = $2 AND ts IS NULL`,
		outbox.StateSkipped, outbox.CodeNoReceiver); n != rows {
		t.Errorf("%d of %d outbox rows skipped with code %s", n, rows, outbox.CodeNoReceiver)
	}
	if got := metricstest.Values(t, events, "sweeper_slack_skipped_total"); got["receiver=slack"] != float64(rows) {
		t.Errorf("sweeper_slack_skipped_total = %v, want %d", got, rows)
	}

	reg := prometheus.NewRegistry()
	state := app.NewStateCollector(b.pool, ledger.Native(), nil)
	reg.MustRegister(state)
	if err := state.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"age=<1m": 0, "age=1m-10m": 0, "age=10m-1h": 0, "age=>1h": 0},
		metricstest.Values(t, reg, "sweeper_outbox_pending_rows")); diff != "" {
		t.Errorf("pending rows by age (-want +got):\n%s", diff)
	}
	if got := metricstest.Values(t, reg, "sweeper_outbox_rows"); got["state=skipped"] != float64(rows) || got["state=pending"] != 0 {
		t.Errorf("sweeper_outbox_rows = %v, want %d skipped and none pending", got, rows)
	}
}
