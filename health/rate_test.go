package health_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

type countingLookup struct {
	mu   sync.Mutex
	sent []time.Time
}

func (c *countingLookup) Lookup(context.Context, providers.Query) ([]providers.Record, error) {
	c.mu.Lock()
	c.sent = append(c.sent, time.Now())
	c.mu.Unlock()
	return nil, nil
}

// TestRateHoldsForTheCluster: two replicas — each its own pool, its own
// provider with the per-process limit of 10 requests a second — asking one
// provider as fast as they may send it, together, at most 10 a second
// after the first second's burst. Without the shared bucket each replica
// would send 10 a second, twice the limit.
func TestRateHoldsForTheCluster(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	const perSec, burst, each = 10.0, 10, 20
	adapter := &countingLookup{}
	var wg sync.WaitGroup
	for range 2 {
		p := providers.NewProvider("sms", "http", adapter, providers.Limits{LookupTimeout: 10 * time.Second, RateLimit: perSec, Concurrency: 4})
		p.SetSharedRate(health.NewRate(dbtest.Pool(t, url), "sms", perSec, burst))
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each / 4 {
					if _, err := p.Lookup(context.Background(), providers.Query{OpKey: "op"}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	sent := slices.SortedFunc(slices.Values(adapter.sent), func(a, b time.Time) int { return a.Compare(b) })
	if len(sent) != 2*each {
		t.Fatalf("%d requests sent, want %d", len(sent), 2*each)
	}
	// The bucket's turns are on the database's clock and the sends a
	// moment later on this one's, so the check is on the whole span, with
	// room for that moment: the last of the 40 requests goes no earlier
	// than 3 s after the first (30 turns at 10 a second), where two
	// buckets of their own would have let them all go within 1 s.
	const room = 300 * time.Millisecond
	earliest := time.Duration(float64(len(sent)-burst) / perSec * float64(time.Second))
	if got := sent[len(sent)-1].Sub(sent[0]); got < earliest-room {
		t.Fatalf("the %d requests went within %v, before the last one's turn at %v: the replicas together sent more than %g a second",
			len(sent), got, earliest, perSec)
	}
}

// TestRateTakeAndReturn: a bucket of burst 2 gives two turns at once, the
// third a wait of one turn; a returned token is the next request's.
func TestRateTakeAndReturn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := health.NewRate(dbtest.NewPool(t), "mailer", 1, 2)
	for i := range 2 {
		if wait, err := r.Take(ctx, time.Minute); err != nil || wait != 0 {
			t.Fatalf("take %d: wait %v, %v; want none", i+1, wait, err)
		}
	}
	wait, err := r.Take(ctx, time.Minute)
	if err != nil || wait < 900*time.Millisecond || wait > time.Second {
		t.Fatalf("third take: wait %v, %v; want about a second", wait, err)
	}
	if err := r.Return(ctx); err != nil {
		t.Fatal(err)
	}
	if wait, err := r.Take(ctx, time.Minute); err != nil || wait > time.Second {
		t.Fatalf("take after a return: wait %v, %v; want at most a turn", wait, err)
	}
}

// TestPacedByTheClusterWritesNothing: a replica whose requests the
// cluster's rate limit paces — another replica took the bucket's only
// token, and the next turn is past lookup_timeout — writes nothing to the
// bucket: the first paced request asks it once and takes no token, the
// others, within the wait it learned, do not ask at all.
func TestPacedByTheClusterWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewDatabase(t)
	// One turn every ten seconds, far past b's lookup_timeout however
	// slow the machine; a waits as long as it takes for the only token,
	// so a loaded database cannot leave it to its own limit.
	const perSec = 0.1
	limits := providers.Limits{LookupTimeout: 500 * time.Millisecond, RateLimit: 1000, Concurrency: 4}
	adapter := &countingLookup{}
	aLimits := limits
	aLimits.LookupTimeout = time.Minute
	a := providers.NewProvider("sms", "http", adapter, aLimits)
	a.SetSharedRate(health.NewRate(dbtest.Pool(t, url), "sms", perSec, 1))
	if _, err := a.Lookup(ctx, providers.Query{OpKey: "op-a"}); err != nil {
		t.Fatal(err)
	}
	pool := dbtest.Pool(t, url)
	var tokens float64
	var at time.Time
	if err := pool.QueryRow(ctx, `SELECT tokens, updated_at FROM sweeper.provider_rate`).Scan(&tokens, &at); err != nil {
		t.Fatal(err)
	}

	counted := &statements{}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = counted
	bPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bPool.Close)
	b := providers.NewProvider("sms", "http", adapter, limits)
	b.SetSharedRate(health.NewRate(bPool, "sms", perSec, 1))
	for i := range 20 {
		_, err := b.Lookup(ctx, providers.Query{OpKey: "op-b"})
		if class, _ := providers.Classify(err); class != providers.ClassPaced {
			t.Fatalf("lookup %d: %v; want paced by the cluster's rate limit", i, err)
		}
	}
	var tokensAfter float64
	var atAfter time.Time
	if err := pool.QueryRow(ctx, `SELECT tokens, updated_at FROM sweeper.provider_rate`).Scan(&tokensAfter, &atAfter); err != nil {
		t.Fatal(err)
	}
	if n := counted.reads.Load() + counted.writes.Load(); n != 1 || tokensAfter != tokens || !atAfter.Equal(at) {
		t.Errorf("20 lookups paced by the cluster: %d statements, bucket %g at %s → %g at %s; want one statement and the bucket untouched",
			n, tokens, at, tokensAfter, atAfter)
	}
	if len(adapter.sent) != 1 {
		t.Errorf("%d requests sent; want replica a's alone", len(adapter.sent))
	}
}

// TestRateSetLimit: a limit changed while the bucket is owed (a
// configuration reload) paces the next request by the new rate, not the
// old one.
func TestRateSetLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := health.NewRate(dbtest.NewPool(t), "mailer", 0.5, 1)
	if wait, err := r.Take(ctx, time.Hour); err != nil || wait != 0 {
		t.Fatalf("first take: wait %v, %v; want none", wait, err)
	}
	if wait, err := r.Take(ctx, time.Hour); err != nil || wait < 1500*time.Millisecond {
		t.Fatalf("second take at 0.5/s: wait %v, %v; want about 2s", wait, err)
	}
	r.SetLimit(20, 20)
	// Two tokens owed at 20 a second: a tenth of a second, where the old
	// rate would have asked for four seconds.
	if wait, err := r.Take(ctx, time.Hour); err != nil || wait > 500*time.Millisecond {
		t.Fatalf("take after SetLimit(20, 20): wait %v, %v; want about 0.15s", wait, err)
	}
}
