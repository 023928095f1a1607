package jobs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// TestOwnPacingIsNeverAFailure: 60 stale operations whose records the
// provider holds, a rate limit of 20 lookups a second and a lookup budget
// of one second. Most lookups wait for this process's own rate limiter far
// longer than the budget; that wait asks nobody, so it is no attempt and no
// failure: every operation ends done, none lookup_failed, and the provider
// is asked once per operation.
func TestOwnPacingIsNeverAFailure(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	holds := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			asked.Add(1)
			return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
		},
	}}
	paced := providers.NewProvider("paced", "fake", holds, providers.Limits{
		StaleAfter: 10 * time.Minute, LookupTimeout: 200 * time.Millisecond, LookupBudget: time.Second,
		RateLimit: 20, Concurrency: 2,
	})
	b := setup(t, baseConfig, map[string]*providers.Provider{"paced": paced})
	var keys []string
	for i := range 60 {
		keys = append(keys, b.claim(t, fmt.Sprintf("paced-%02d", i), "paced", stale).OpKey)
	}

	t.Run("River jobs", func(t *testing.T) {
		client := b.startClient(t)
		b.sweep(t, client)
		b.waitSettled(t, keys, time.Minute)
		if n := b.count(t, `SELECT count(*) FROM ledger.operations WHERE status = 'done' AND op_key LIKE 'paced-%'`); n != len(keys) {
			t.Errorf("%d of %d done; tickets: %d", n, len(keys), b.count(t, `SELECT count(*) FROM sweeper.tickets`))
		}
		if n := asked.Load(); n != int64(len(keys)) {
			t.Errorf("the provider was asked %d times, want once per operation (%d)", n, len(keys))
		}
	})

	t.Run("sweep --once", func(t *testing.T) {
		asked.Store(0)
		var more []string
		for i := range 30 {
			more = append(more, b.claim(t, fmt.Sprintf("paced-once-%02d", i), "paced", stale).OpKey)
		}
		sum, err := b.sweeper.SweepOnce(context.Background(), jobs.OnceOptions{Concurrency: 30})
		if err != nil || sum.Errors != 0 || sum.Done != len(more) || len(sum.Tickets) != 0 {
			t.Errorf("sweep --once: %+v, %v; want %d done, no ticket", sum, err, len(more))
		}
		for _, k := range more {
			if op := b.status(t, k); op.Status != ledger.StatusDone {
				t.Errorf("%s is %s", k, op.Status)
			}
		}
	})
}
