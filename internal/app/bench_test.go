package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/internal/app"
)

// BenchmarkSettleThroughput measures operations settled per second by the
// River lookup jobs end to end (sweep, lookup against sim, decision,
// transaction), for a backlog of b.N stale operations of mixed outcomes.
//
//	go test -run '^$' -bench SettleThroughput -benchtime 5000x ./jobs
func BenchmarkSettleThroughput(b *testing.B) {
	for _, workers := range []int{100, 500} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("workers=%d/commit_batch=%d", workers, batch), func(b *testing.B) {
				benchSettle(b, workers, batch)
			})
		}
	}
}

func benchSettle(b *testing.B, workers, batch int) {
	cfg := strings.Replace(baseConfig, "max_workers = 50", fmt.Sprintf("max_workers = %d", workers), 1)
	cfg = strings.Replace(cfg, "batch_size = 50", "batch_size = 500", 1)
	bundle := setup(b, cfg, nil)
	ctx := context.Background()
	// Fast outcomes only: found, many, mismatch, not found, unsupported.
	prefixes := []string{"found", "many", "mismatch", "nf", "unsupported"}
	_, err := bundle.pool.Exec(ctx, `
		INSERT INTO ledger.operations (op_key, workflow, provider, action, recipient, payload_hash, first_attempt_at)
		SELECT ($2::text[])[1 + i % 5] || '-' || i, 'billing', 'sim', 'send_email', 'jane.doe@example.com',
		       repeat('a', 64), now() - interval '1 hour'
		FROM generate_series(1, $1) i`, b.N, prefixes)
	if err != nil {
		b.Fatal(err)
	}
	client := bundle.startClient(b, app.ClientOptions{CommitBatch: batch})
	b.ResetTimer()
	start := time.Now()
	bundle.sweep(b, client)
	for bundle.count(b, `SELECT count(*) FROM ledger.operations WHERE status = 'pending'`) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
}
