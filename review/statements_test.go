package review_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/tools/benchkit"
)

// batchStatements is what writing a batch of outcomes costs, whatever its
// size: BEGIN, the writer's declaration, the records' locks, the done
// update, the move to review, the tickets, their events, COMMIT.
const batchStatements = 8

// TestApplyBatchStatementCount: a batch of outcomes, half done and half
// review, is written in a constant number of statements — at 100 outcomes,
// 0.08 a settled operation.
func TestApplyBatchStatementCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := &benchkit.StatementCounter{}
	cfg, err := pgxpool.ParseConfig(dbtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store := review.NewStore(pool, ledger.Native(), batchPolicy)
	for _, n := range []int{10, 100} {
		ops := claimN(t, ledger.NewStore(pool, ledger.Native()), fmt.Sprintf("count%d", n), n)
		items := make([]review.Item, n)
		for i, op := range ops {
			d := proof.Decision{Reason: proof.ReasonNotFound, Detail: "none"}
			if i%2 == 0 {
				d = proof.Decision{Done: true, ProviderRecordID: fmt.Sprintf("rec_%d_%d", n, i)}
			}
			items[i] = review.Item{Op: op, Decision: d, Evidence: proof.Evidence{OpKey: op.OpKey, Reason: d.Reason}, Now: time.Now()}
		}
		counter.Start()
		results, err := store.ApplyBatch(ctx, items)
		statements := counter.Stop()
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.Err != nil || !r.Applied.Settled || (i%2 == 1) != (r.Applied.TicketID != 0) {
				t.Errorf("%d outcomes, item %d: %+v", n, i, r)
			}
		}
		if statements != batchStatements {
			t.Errorf("%d outcomes took %d statements, want %d:\n%v", n, statements, batchStatements, counter.Top(20))
		}
	}
}
