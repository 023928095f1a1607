package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// claimOps claims n pending operations key-0 … key-(n-1) with attempt's
// identity.
func claimOps(t *testing.T, db ledger.DB, prefix string, n int) []ledger.Operation {
	t.Helper()
	ops := make([]ledger.Operation, n)
	for i := range ops {
		c, err := ledger.NewStore(db, ledger.Native()).Claim(context.Background(), attempt(fmt.Sprintf("%s-%d", prefix, i)))
		if err != nil {
			t.Fatal(err)
		}
		ops[i] = c.Operation
	}
	return ops
}

// TestMoveToDone: every compare-and-set of the done write, item by item,
// in one call.
func TestMoveToDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	store := ledger.NewStore(tx, ledger.Native())
	ops := claimOps(t, tx, "sd", 8)
	if _, err := store.Confirm(ctx, ops[1].OpKey, "rec_by_workflow"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Confirm(ctx, ops[2].OpKey, "rec_held"); err != nil {
		t.Fatal(err)
	}
	changed := ledger.DoneItemOf(ops[3], "rec_3")
	changed.PayloadHash = strings.Repeat("0", 64)
	otherRecipient := ledger.DoneItemOf(ops[6], "rec_6")
	otherRecipient.Recipient = "b@example.com"
	items := []ledger.DoneItem{
		ledger.DoneItemOf(ops[0], "rec_0"),      // moves
		ledger.DoneItemOf(ops[1], "rec_1"),      // confirmed meanwhile: the workflow's record stands
		ledger.DoneItemOf(ops[4], "rec_held"),   // held by ops[2]
		changed,                                 // looked up as another payload
		ledger.DoneItemOf(ops[5], "rec_shared"), // first claim on rec_shared in the batch: wins
		ledger.DoneItemOf(ops[7], "rec_shared"), // second claim on it: loses
		otherRecipient,                          // looked up for another recipient
		ledger.DoneItemOf(ops[0], "rec_0"),      // the same item again: the row moves once
		ledger.DoneItemOf(ops[7], "rec_x"),      // ops[7] again, with a free record: wins
	}
	moved, err := ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	if !moved[0] || moved[7] {
		t.Errorf("the same item twice moved %v, %v; want the first only", moved[0], moved[7])
	}
	want := []bool{true, false, false, false, true, false, false}
	if diff := cmp.Diff(want, moved[:7]); diff != "" {
		t.Errorf("moved mismatch (-want +got):\n%s", diff)
	}
	wantRows := map[int]struct {
		status ledger.Status
		record string
	}{
		0: {ledger.StatusDone, "rec_0"}, 1: {ledger.StatusDone, "rec_by_workflow"}, 3: {ledger.StatusPending, ""},
		4: {ledger.StatusPending, ""}, 5: {ledger.StatusDone, "rec_shared"}, 6: {ledger.StatusPending, ""},
	}
	for i, w := range wantRows {
		got, err := store.GetByID(ctx, ops[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != w.status || got.ProviderRecordID != w.record {
			t.Errorf("%s is %s with %q, want %s with %q", got.OpKey, got.Status, got.ProviderRecordID, w.status, w.record)
		}
	}
	if got, _ := store.GetByID(ctx, ops[7].ID); !moved[8] || got.Status != ledger.StatusDone || got.ProviderRecordID != "rec_x" {
		t.Errorf("ops[7] is %s with %q, moved=%v; want done with its free record rec_x", got.Status, got.ProviderRecordID, moved[8])
	}
	if moved, err := ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, nil); err != nil || len(moved) != 0 {
		t.Errorf("MoveToDone(nil) = %v, %v; want nothing", moved, err)
	}
}

// TestMoveToDoneConcurrentBatches: two batches at once, each claiming the
// same record for a different operation: exactly one operation is done
// with it, the other stays pending to be decided again — never two done.
func TestMoveToDoneConcurrentBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	for round := range 20 {
		ops := claimOps(t, pool, fmt.Sprintf("race%d", round), 6)
		record := fmt.Sprintf("rec_race_%d", round)
		batches := [][]ledger.DoneItem{
			{ledger.DoneItemOf(ops[0], record+"_free_a"), ledger.DoneItemOf(ops[1], record), ledger.DoneItemOf(ops[2], record+"_free_b")},
			{ledger.DoneItemOf(ops[3], record+"_free_c"), ledger.DoneItemOf(ops[4], record), ledger.DoneItemOf(ops[5], record+"_free_d")},
		}
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			moved [2][]bool
			errs  [2]error
		)
		for b := range batches {
			wg.Go(func() {
				<-start
				errs[b] = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					var err error
					moved[b], err = ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, batches[b])
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		for b, err := range errs {
			if err != nil {
				t.Fatalf("round %d, batch %d: %v", round, b, err)
			}
		}
		if moved[0][1] == moved[1][1] {
			t.Errorf("round %d: both claims on %s reported moved=%v", round, record, moved[0][1])
		}
		if !moved[0][0] || !moved[0][2] || !moved[1][0] || !moved[1][2] {
			t.Errorf("round %d: free records not all moved: %v", round, moved)
		}
		var done int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM ledger.operations WHERE provider_record_id = $1 AND status = 'done'`,
			record).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done != 1 {
			t.Fatalf("round %d: %d operations done with %s, want exactly 1", round, done, record)
		}
	}
}

// TestMoveToReview: pending rows move, others are left as they are; the
// move is sweeper's alone.
func TestMoveToReview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	ops := claimOps(t, tx, "mr", 3)
	if _, err := ledger.NewStore(tx, ledger.Native()).Confirm(ctx, ops[1].OpKey, "rec_1"); err != nil {
		t.Fatal(err)
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.NewStore(sp, ledger.Native()).MoveToReview(ctx, []int64{ops[0].ID}); err == nil {
		t.Error("MoveToReview without the writer's declaration succeeded")
	}
	if err := sp.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
		t.Fatal(err)
	}
	moved, err := ledger.NewStore(tx, ledger.Native()).MoveToReview(ctx, []int64{ops[0].ID, ops[1].ID, ops[2].ID, ops[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{ops[0].ID, ops[2].ID}, moved, cmpopts.SortSlices(func(a, b int64) bool { return a < b })); diff != "" {
		t.Errorf("moved mismatch (-want +got):\n%s", diff)
	}
}
