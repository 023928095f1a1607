package review_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

var batchPolicy = review.Policy{DefaultOwner: "U0OWNER01", Window: time.Hour, Priority: "normal"}

func claimN(t *testing.T, store *ledger.Store, prefix string, n int) []ledger.Operation {
	t.Helper()
	ops := make([]ledger.Operation, n)
	for i := range n {
		c, err := store.Claim(context.Background(), ledger.Attempt{
			OpKey: fmt.Sprintf("%s-%d", prefix, i), Workflow: "wf", Provider: "p", Action: "send",
			Payload: json.RawMessage(`{"i":` + fmt.Sprint(i) + `}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		ops[i] = c.Operation
	}
	return ops
}

// TestApplyBatchIsolatesAFailingItem: an item the database rejects fails
// alone; the rest of its batch is written.
func TestApplyBatchIsolatesAFailingItem(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ops := claimN(t, ledger.NewStore(pool, ledger.Native()), "iso", 3)
	items := []review.Item{
		{Op: ops[0], Decision: proof.Decision{Done: true, ProviderRecordID: "rec_0"}, Now: time.Now()},
		{Op: ops[1], Decision: proof.Decision{Reason: "no_such_reason"}, Now: time.Now()}, // violates tickets_reason_check
		{Op: ops[2], Decision: proof.Decision{Reason: proof.ReasonNotFound}, Evidence: proof.Evidence{OpKey: ops[2].OpKey}, Now: time.Now()},
	}
	results, err := review.NewStore(pool, ledger.Native(), batchPolicy).ApplyBatch(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err != nil || !results[0].Applied.Settled || results[2].Err != nil || results[2].Applied.TicketID == 0 {
		t.Errorf("good items: %+v, %+v", results[0], results[2])
	}
	if results[1].Err == nil {
		t.Error("the bad item reported no error")
	}
	var status string
	if err := pool.QueryRow(context.Background(), `SELECT status FROM ledger.operations WHERE id = $1`, ops[1].ID).Scan(&status); err != nil || status != "pending" {
		t.Errorf("the bad item's row is %s (%v); its failed write must leave it pending", status, err)
	}
}

// TestApplyBatchesClaimingOneRecord: two batches commit at once, each
// proving a different operation with the same record: one operation is
// done with it, the other is reported unsettled and stays pending, to be
// decided again — never two done.
func TestApplyBatchesClaimingOneRecord(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	store := review.NewStore(pool, ledger.Native(), batchPolicy)
	for round := range 10 {
		ops := claimN(t, ledger.NewStore(pool, ledger.Native()), fmt.Sprintf("claim%d", round), 4)
		record := fmt.Sprintf("rec_both_%d", round)
		batch := func(a, b ledger.Operation) []review.Item {
			return []review.Item{
				{Op: a, Decision: proof.Decision{Reason: proof.ReasonNotFound}, Evidence: proof.Evidence{OpKey: a.OpKey}, Now: time.Now()},
				{Op: b, Decision: proof.Decision{Done: true, ProviderRecordID: record}, Now: time.Now()},
			}
		}
		batches := [][]review.Item{batch(ops[0], ops[1]), batch(ops[2], ops[3])}
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			results [2][]review.ItemResult
			errs    [2]error
		)
		for i := range batches {
			wg.Go(func() {
				<-start
				results[i], errs[i] = store.ApplyBatch(context.Background(), batches[i])
			})
		}
		close(start)
		wg.Wait()
		for i := range batches {
			if errs[i] != nil || results[i][0].Err != nil || results[i][1].Err != nil || !results[i][0].Applied.Settled {
				t.Fatalf("round %d, batch %d: %+v, %v", round, i, results[i], errs[i])
			}
		}
		if results[0][1].Applied.Settled == results[1][1].Applied.Settled {
			t.Errorf("round %d: both claims on %s settled=%v", round, record, results[0][1].Applied.Settled)
		}
		var done, pending int
		err := pool.QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE status = 'done' AND provider_record_id = $1),
			count(*) FILTER (WHERE status = 'pending')
			FROM ledger.operations WHERE id = ANY($2)`, record, []int64{ops[1].ID, ops[3].ID}).Scan(&done, &pending)
		if err != nil {
			t.Fatal(err)
		}
		if done != 1 || pending != 1 {
			t.Fatalf("round %d: %d done with %s and %d pending, want 1 and 1", round, done, record, pending)
		}
	}
}
