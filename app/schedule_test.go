package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
)

// TestPeriodicRunOnStartOncePerPeriod: through River itself, a daemon's
// run on start of a CRON_TZ schedule is named by the schedule's next fire
// time, and a second daemon starting within the same period (a restart, a
// new leader) adds no run.
func TestPeriodicRunOnStartOncePerPeriod(t *testing.T) {
	t.Parallel()
	// Once a year, in New York: no fire during the test.
	b := setup(t, baseConfig+`
[schedules]
sweep = "CRON_TZ=America/New_York 0 3 1 1 *"
escalate = "CRON_TZ=America/New_York 0 3 1 1 *"
`, nil)
	ctx := context.Background()
	sweeps := func() (n int, args string) {
		t.Helper()
		err := b.pool.QueryRow(ctx, `SELECT count(*), coalesce(min(args::text), '') FROM sweeper.river_job WHERE kind = 'sweep'`).Scan(&n, &args)
		if err != nil {
			t.Fatal(err)
		}
		return n, args
	}
	for i := range 2 {
		d, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// The run on start is inserted once this daemon leads; the second
		// daemon's is refused as a duplicate, so wait for its leadership.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var leader string
			_ = b.pool.QueryRow(ctx, `SELECT leader_id FROM sweeper.river_leader`).Scan(&leader)
			if n, _ := sweeps(); (i == 0 && n > 0) || (i == 1 && leader == d.Client.ID()) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("daemon %d: no leadership or run on start in 30s", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // the enqueuer's start
		stop, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = d.Stop(stop)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	n, args := sweeps()
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	next := time.Date(time.Now().Year(), 1, 1, 3, 0, 0, 0, newYork)
	if !next.After(time.Now()) {
		next = next.AddDate(1, 0, 0)
	}
	next = next.UTC()
	if n != 1 || !strings.Contains(args, next.Format(time.RFC3339)) {
		t.Errorf("%d sweep runs, args %s; want one, for the period ending %s", n, args, next.Format(time.RFC3339))
	}
}
