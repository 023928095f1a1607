package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// partitionLedger turns ledger.operations into a table partitioned by
// month of created_at, with the same columns, checks, triggers and partial
// indexes. A unique index of a partitioned table must hold the partition
// key: the primary key becomes (id, created_at), op_key and record ids
// unique within a month only.
const partitionLedger = `
ALTER TABLE ledger.operations RENAME TO operations_flat;
CREATE TABLE ledger.operations (LIKE ledger.operations_flat INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)
	PARTITION BY RANGE (created_at);
ALTER TABLE ledger.operations ADD PRIMARY KEY (id, created_at);
ALTER TABLE ledger.operations ADD UNIQUE (op_key, created_at);
CREATE TABLE ledger.operations_old PARTITION OF ledger.operations FOR VALUES FROM (MINVALUE) TO (date_trunc('month', now() - interval '1 month'));
CREATE TABLE ledger.operations_last_month PARTITION OF ledger.operations
	FOR VALUES FROM (date_trunc('month', now() - interval '1 month')) TO (date_trunc('month', now()));
CREATE TABLE ledger.operations_this_month PARTITION OF ledger.operations
	FOR VALUES FROM (date_trunc('month', now())) TO (date_trunc('month', now() + interval '1 month'));
CREATE TABLE ledger.operations_later PARTITION OF ledger.operations DEFAULT;
CREATE INDEX ON ledger.operations (provider, first_attempt_at, id) WHERE status = 'pending';
CREATE INDEX ON ledger.operations (payload_hash, provider) WHERE status IN ('pending', 'review') AND payload_hash IS NOT NULL;
CREATE INDEX ON ledger.operations (provider_record_id, provider) WHERE provider_record_id IS NOT NULL;
CREATE INDEX ON ledger.operations (provider) WHERE status = 'review';
CREATE INDEX ON ledger.operations (provider, updated_at) WHERE status IN ('done', 'failed');
DROP TABLE ledger.operations_flat;
CREATE TRIGGER operations_guard BEFORE UPDATE ON ledger.operations FOR EACH ROW EXECUTE FUNCTION ledger.operations_guard();
CREATE TRIGGER operations_contract BEFORE INSERT OR UPDATE ON ledger.operations FOR EACH ROW EXECUTE FUNCTION ledger.operations_contract();
CREATE TRIGGER operations_keep_open_tickets BEFORE DELETE ON ledger.operations FOR EACH ROW EXECUTE FUNCTION ledger.operations_keep_open_tickets();
CREATE TRIGGER operations_record_once BEFORE INSERT OR UPDATE OF provider_record_id ON ledger.operations
	FOR EACH ROW EXECUTE FUNCTION ledger.operations_record_once();
`

// TestMonthPartitionedLedger: on a ledger partitioned by month, the stale
// scan still finds every stale pending row in order across the months,
// and the guards still hold — states move forward only, done needs a
// record, sweeper's own writes refuse a record an operation of another
// month holds. What does not carry over, because a unique index of a
// partitioned table must hold the partition key: the database's own
// refusal of a record held in another month (a workflow's plain UPDATE),
// and claiming (INSERT … ON CONFLICT (op_key)), which needs a unique index
// on op_key alone.
func TestMonthPartitionedLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	if _, err := pool.Exec(ctx, partitionLedger); err != nil {
		t.Fatal(err)
	}
	// Three months: settled history two months back, stale pending rows
	// last month and this one, a fresh pending row now.
	if _, err := pool.Exec(ctx, `
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, provider_record_id, first_attempt_at, created_at)
		SELECT 'old-' || i, 'wf', 'mailer', 'send', repeat('a', 64), 'done', 'rec-old-' || i,
		       now() - interval '70 days', now() - interval '70 days'
		FROM generate_series(1, 300) AS i;
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at, created_at)
		SELECT 'stale-' || i, 'wf', 'mailer', 'send', repeat('a', 64),
		       now() - interval '1 hour' - i * interval '1 day', now() - interval '1 hour' - i * interval '1 day'
		FROM generate_series(0, 40) AS i;
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash)
		VALUES ('fresh', 'wf', 'mailer', 'send', repeat('a', 64))`); err != nil {
		t.Fatal(err)
	}
	var months int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT tableoid) FROM ledger.operations WHERE op_key LIKE 'stale-%'`).Scan(&months); err != nil || months < 2 {
		t.Fatalf("the stale rows lie in %d partitions (%v), want at least 2", months, err)
	}

	store := ledger.NewStore(pool, ledger.Native())
	var seen []ledger.Operation
	var cursor ledger.StaleCursor
	for {
		page, err := store.StalePending(ctx, "mailer", time.Now().Add(-10*time.Minute), cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, page...)
		if len(page) < 7 {
			break
		}
		cursor = ledger.StaleCursor{FirstAttemptAt: page[len(page)-1].FirstAttemptAt, ID: page[len(page)-1].ID}
	}
	if len(seen) != 41 {
		t.Fatalf("the stale scan saw %d rows across the months, want 41", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if !seen[i-1].FirstAttemptAt.Before(seen[i].FirstAttemptAt) {
			t.Fatalf("the stale scan is out of order at %d: %s then %s", i, seen[i-1].FirstAttemptAt, seen[i].FirstAttemptAt)
		}
	}

	// The guards: a record another operation (two months back) holds is
	// refused; done needs a record; a settled row never moves back.
	if _, err := store.Confirm(ctx, "stale-3", "rec-old-1"); !errors.Is(err, ledger.ErrRecordHeld) {
		t.Errorf("confirm with a record an operation of another month holds: %v, want ErrRecordHeld", err)
	}
	// The database's own guard of one record per provider is a unique
	// index, which on a partitioned table holds within one month only: a
	// workflow's plain UPDATE taking a record held two months back passes.
	// Sweeper's writes (above) still refuse it.
	if _, err := pool.Exec(ctx, `UPDATE ledger.operations SET provider_record_id = 'rec-old-2' WHERE op_key = 'stale-4'`); err != nil {
		t.Errorf("a plain UPDATE taking a record held in another month: %v; the unique index was expected to hold within a month only", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE ledger.operations SET status = 'done' WHERE op_key = 'stale-5'`); err == nil {
		t.Error("done without a record was accepted")
	}
	if _, err := store.Confirm(ctx, "stale-6", "rec-new-6"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE ledger.operations SET status = 'pending' WHERE op_key = 'stale-6'`); err == nil ||
		!strings.Contains(err.Error(), "illegal status transition") {
		t.Errorf("done → pending: %v, want the transition guard's refusal", err)
	}
	if n, err := store.CountStalePending(ctx, "mailer", time.Now().Add(-10*time.Minute)); err != nil || n != 40 {
		t.Errorf("CountStalePending after one confirmed = %d, %v; want 40", n, err)
	}

	// What a month-partitioned ledger cannot keep: claims.
	if _, err := store.Claim(ctx, ledger.Attempt{OpKey: "new", Workflow: "wf", Provider: "mailer", Action: "send",
		PayloadHash: strings.Repeat("a", 64)}); err == nil || !strings.Contains(err.Error(), "ON CONFLICT") {
		t.Errorf("claim on a month-partitioned ledger: %v, want PostgreSQL's refusal of ON CONFLICT (op_key)", err)
	}
}
