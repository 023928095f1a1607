package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/testwait"
)

const crashConfig = `
[database]
url = "postgres://unused"
# Tests share one server: a small pool per daemon keeps them under
# its connection limit.
max_conns = 8

[schedules]
sweep = "@every 1s"

[sweep]
batch_size = 100
query_timeout = "1s"
timeout = "2s"

[river]
max_workers = 20

[review]
default_owner = "U0DEFAULT1"

[http]
listen = "127.0.0.1:0"

[providers.sim]
kind = "sim"
simulated = true
stale_after = "1m"
lookup_timeout = "300ms"
lookup_budget = "2s"
rate_limit = 1000.0
concurrency = 20
latency = "30ms"
# error-* fails for good and must end as lookup_failed: no outage pause.
outage_after = 0
[[providers.sim.rules]]
match = "found-*"
outcome = "found"
[[providers.sim.rules]]
match = "many-*"
outcome = "many"
[[providers.sim.rules]]
match = "error-*"
outcome = "error"
`

// daemonProc is one `sweeper run` process.
type daemonProc struct {
	cmd    *exec.Cmd
	output *lockedBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // its exit error, once exited is closed
}

func startDaemon(t *testing.T, bin, cfgFile, dbURL string) *daemonProc {
	t.Helper()
	return startDaemonEnv(t, bin, cfgFile, map[string]string{config.EnvDatabaseURL: dbURL})
}

// TestKillNineLosesNothing (I5, I4): three daemons share a database; one is
// killed with SIGKILL mid-run and restarted. Every stale operation still
// ends done or in review — with exactly one ticket and one opened event
// each — and no job is left unfinished: the dead process's running jobs are
// rescued and run again.
func TestKillNineLosesNothing(t *testing.T) {
	skipLong(t)
	t.Parallel()
	bin := binary(t)
	dbURL := clusterDatabase(t)
	cfgFile := writeConfig(t, crashConfig)
	pool := dbtest.Pool(t, dbURL)

	var keys []string
	want := map[string]int{}
	for i := range 600 {
		prefix := []string{"found", "many", "nf", "error"}[i%4]
		keys = append(keys, fmt.Sprintf("%s-%04d", prefix, i))
		want[map[string]string{"found": "done", "many": "multiple_matches", "nf": "not_found", "error": "lookup_failed"}[prefix]]++
	}
	seed(t, dbURL, keys...)

	daemons := []*daemonProc{startDaemon(t, bin, cfgFile, dbURL), startDaemon(t, bin, cfgFile, dbURL), startDaemon(t, bin, cfgFile, dbURL)}
	// Kill one while lookups are in flight, twice over.
	for round := range 2 {
		waitFor(t, daemons[0], 30*time.Second, fmt.Sprintf("round %d: a lookup running", round), func() bool {
			return countRunning(t, pool) > 0
		})
		victim := daemons[round]
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-victim.exited
		daemons[round] = startDaemon(t, bin, cfgFile, dbURL)
	}

	testwait.UntilNil(t, 150*time.Second, "nothing pending and no lookup unfinished after the kills", func() error {
		var pending, unfinished int
		err := pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM ledger.operations WHERE status = 'pending'),
			(SELECT count(*) FROM sweeper.river_job WHERE kind = 'lookup_batch' AND state NOT IN ('completed', 'cancelled', 'discarded'))`).Scan(&pending, &unfinished)
		if err != nil {
			t.Fatal(err)
		}
		if pending == 0 && unfinished == 0 {
			return nil
		}
		return errors.Join(fmt.Errorf("%d operations pending and %d lookups unfinished", pending, unfinished), daemonOutput{daemons[2]})
	})

	got := map[string]int{}
	rows, err := pool.Query(context.Background(), `
		SELECT 'done', count(*) FROM ledger.operations WHERE status = 'done'
		UNION ALL SELECT reason, count(*) FROM sweeper.tickets GROUP BY reason`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		got[k] = n
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	var review, tickets, events, discarded int
	err = pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM ledger.operations WHERE status = 'review'),
		(SELECT count(*) FROM sweeper.tickets),
		(SELECT count(*) FROM sweeper.ticket_events WHERE kind = 'opened'),
		(SELECT count(*) FROM sweeper.river_job WHERE state = 'discarded')`).Scan(&review, &tickets, &events, &discarded)
	if err != nil {
		t.Fatal(err)
	}
	if review != tickets || tickets != events || discarded != 0 {
		t.Errorf("%d review operations, %d tickets, %d opened events, %d discarded jobs", review, tickets, events, discarded)
	}

	// The survivors still stop cleanly.
	var wg sync.WaitGroup
	for _, d := range daemons {
		wg.Go(func() {
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.exited:
				if d.err != nil {
					t.Errorf("daemon exit after SIGTERM: %v", d.err)
				}
			case <-time.After(40 * time.Second):
				t.Errorf("daemon did not stop within 40s of SIGTERM")
			}
		})
	}
	wg.Wait()
}

func countRunning(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM sweeper.river_job WHERE kind = 'lookup_batch' AND state = 'running'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
