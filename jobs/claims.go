package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// The claim statements keep sweeper.lookup_claims: one row per stale
// operation a lookup job holds, so that a sweep hands an operation on only
// once while a job holds it — what River's per-args uniqueness did when a
// job held one operation.

// claimSQL claims the operations of $1 that are still pending in table
// and that no job holds, returning the ids it claimed. Reading the status
// here, not only in the sweep's page, keeps an operation a lookup settled
// since the page was read from being handed on again.
func claimSQL(table *ledger.Table) string {
	return `
	INSERT INTO sweeper.lookup_claims (operation_id)
	SELECT o.id FROM ` + table.OperationsSQL() + ` o
	WHERE o.id = ANY($1::bigint[]) AND o.status = 'pending'
	ON CONFLICT (operation_id) DO NOTHING
	RETURNING operation_id`
}

// claim claims ids of table in tx and returns those it claimed.
func claim(ctx context.Context, tx pgx.Tx, table *ledger.Table, ids []int64) (map[int64]bool, error) {
	rows, err := tx.Query(ctx, claimSQL(table), ids)
	if err != nil {
		return nil, fmt.Errorf("claim operations: %w", err)
	}
	claimed := map[int64]bool{}
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		claimed[id] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("claim operations: %w", err)
	}
	return claimed, nil
}

// holdSQL points the claims of $1 at the jobs of $2, pairwise, and drops
// the claims of $3: the operations whose outcome the same transaction
// writes.
const holdSQL = `
	WITH held AS (
		UPDATE sweeper.lookup_claims c SET job_id = h.job_id
		FROM unnest($1::bigint[], $2::bigint[]) AS h(operation_id, job_id)
		WHERE c.operation_id = h.operation_id
	)
	DELETE FROM sweeper.lookup_claims WHERE operation_id = ANY($3::bigint[])`

// hold points the claims of opIDs at jobIDs (pairwise) and releases those
// of released, in one statement.
func hold(ctx context.Context, tx ledger.DB, opIDs, jobIDs, released []int64) error {
	if len(opIDs) == 0 && len(released) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, holdSQL, opIDs, jobIDs, released); err != nil {
		return fmt.Errorf("lookup claims: %w", err)
	}
	return nil
}

// releaseLostSQL releases every claim whose job is no longer unfinished:
// completed without releasing it (an older version's job), discarded after
// its attempts, cancelled by a person, or deleted by River's cleaner. A
// claim and the job holding it are written in one transaction, so a claim
// whose job exists unfinished is never released; one released here is
// claimed again by the sweep that follows.
const releaseLostSQL = `
	DELETE FROM sweeper.lookup_claims c
	WHERE NOT EXISTS (SELECT 1 FROM sweeper.river_job j WHERE j.id = c.job_id
	                  AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled'))`

// releaseLost runs releaseLostSQL and returns how many claims it released.
func releaseLost(ctx context.Context, db ledger.DB) (int64, error) {
	tag, err := db.Exec(ctx, releaseLostSQL)
	if err != nil {
		return 0, fmt.Errorf("release lost lookup claims: %w", err)
	}
	return tag.RowsAffected(), nil
}

// heldByJobs returns which of ids a lookup job holds.
func heldByJobs(ctx context.Context, db ledger.DB, ids []int64) (map[int64]bool, error) {
	rows, err := db.Query(ctx, `SELECT operation_id FROM sweeper.lookup_claims WHERE operation_id = ANY($1::bigint[])`, ids)
	if err != nil {
		return nil, fmt.Errorf("lookup claims: %w", err)
	}
	held := map[int64]bool{}
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		held[id] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lookup claims: %w", err)
	}
	return held, nil
}
