package ledger_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestDoneCheckReadsAFewPages: the write that moves an operation to done
// refuses a record another operation holds. That check must stay an index
// lookup however large the ledger: led by the provider, the index was read
// whole for every operation settled, and settling slowed as the ledger grew.
func TestDoneCheckReadsAFewPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	// As in a ledger whose statistics date from before its rows were
	// settled: analyzed while every record id was still empty, so the
	// planner believes the index of held records tiny.
	_, err := tx.Exec(ctx, `
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash)
		SELECT 'held-' || i, 'wf', 'p1', 'send', repeat('a', 64)
		FROM generate_series(1, 60000) i;
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash)
		VALUES ('to-settle', 'wf', 'p1', 'send', repeat('a', 64));
		ANALYZE ledger.operations;
		UPDATE ledger.operations SET status = 'done', provider_record_id = 'rec_' || id
		WHERE op_key LIKE 'held-%'`)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRow(ctx, `SELECT id FROM ledger.operations WHERE op_key = 'to-settle'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// The first write of a session compiles the ledger's trigger functions
	// and reads the catalog: a one-time cost, not the write's. Warm up once.
	for _, record := range []string{"rec_warm", "rec_new", "rec_4"} { // warm-up; held by nobody; by another operation
		// EXPLAIN ANALYZE runs the write: in a savepoint, undone after.
		sp, err := tx.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var raw []byte
		err = sp.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+ledger.MoveToDoneSQL,
			[]int64{id}, []string{record}, []string{"to-settle"}, []string{"send"}, []string{""}, []string{strings.Repeat("a", 64)}).Scan(&raw)
		if rbErr := sp.Rollback(ctx); err == nil {
			err = rbErr
		}
		if err != nil {
			t.Fatal(err)
		}
		var plan []struct {
			Plan struct {
				SharedHit  int `json:"Shared Hit Blocks"`
				SharedRead int `json:"Shared Read Blocks"`
			} `json:"Plan"`
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("plan %s: %v", raw, err)
		}
		if pages := plan[0].Plan.SharedHit + plan[0].Plan.SharedRead; pages > 50 && record != "rec_warm" {
			t.Errorf("record %s: the done write read %d pages of a 60,000-row ledger; want an index lookup\n%s", record, pages, raw)
		}
	}
}
