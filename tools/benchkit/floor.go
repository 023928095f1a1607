package benchkit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
)

// FloorPrefix starts the op_keys of the operations [Floor] writes.
const FloorPrefix = "floor-"

// FloorResult is what [Floor] measured.
type FloorResult struct {
	Ops, Done, Review int
	Elapsed           time.Duration
}

// PerSecond is the floor's operations settled per second.
func (r FloorResult) PerSecond() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// Floor measures what the outcome writes alone cost: it inserts n pending
// operations with the mix's outcomes (untimed), then, timed, writes for
// each batch of batch operations, in one transaction, what a lookup job
// writes for them — the found ones moved to done with a record each (the
// ledger's record guard runs, as for sweeper's writes), the others moved
// to review with a ticket and its "opened" event (whose trigger writes the
// Slack outbox row) — as bare set-based SQL: no River, no provider, no
// decision, no claims. workers batches are written side by side, as that
// many lookup jobs would.
func Floor(ctx context.Context, pool *pgxpool.Pool, table *ledger.Table, n, batch, workers int, mix Mix) (FloorResult, error) {
	_, err := pool.Exec(ctx, insertSQL(table, map[string]string{
		"op_key": `'` + FloorPrefix + `' || CASE WHEN i % 100 < $2 THEN 'found'
		                WHEN i % 100 < $2 + $3 THEN 'nf'
		                WHEN i % 100 < $2 + $3 + $4 THEN 'mismatch'
		                ELSE 'many' END || '-' || i`,
		"workflow": "'bench'", "provider": "'sim'", "action": "'send_email'",
		"recipient":        "'customer-' || i || '@example.com'",
		"payload_hash":     "encode(sha256(convert_to('floor' || i, 'UTF8')), 'hex')",
		"status":           "{w:pending}",
		"first_attempt_at": "now() - interval '1 hour'", "last_attempt_at": "now() - interval '1 hour'",
	}, "FROM generate_series(1, $1::int) AS i"), n, mix.Found, mix.NotFound, mix.Mismatch)
	if err != nil {
		return FloorResult{}, fmt.Errorf("floor: fill: %w", err)
	}
	rows, err := pool.Query(ctx, table.SQL(`SELECT {c:id}::bigint FROM {T} WHERE {c:status} = {w:pending} AND {c:op_key} LIKE '`+FloorPrefix+`%' ORDER BY {c:id}`))
	if err != nil {
		return FloorResult{}, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return FloorResult{}, err
	}
	batches := make(chan []int64, len(ids)/batch+1)
	for from := 0; from < len(ids); from += batch {
		batches <- ids[from:min(len(ids), from+batch)]
	}
	close(batches)

	res := FloorResult{Ops: len(ids)}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for b := range batches {
				done, review, err := floorBatch(ctx, pool, table, b)
				mu.Lock()
				res.Done, res.Review = res.Done+done, res.Review+review
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, firstErr
}

// floorBatch writes one batch's outcomes in one transaction.
func floorBatch(ctx context.Context, pool *pgxpool.Pool, table *ledger.Table, ids []int64) (done, review int, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// As sweeper's own writes do: only sweeper moves a row to review.
		if _, err := tx.Exec(ctx, `SELECT set_config('sweeper.writer', 'sweeper', true)`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, table.SQL(`UPDATE {T} SET {c:status} = {w:done}, {c:provider_record_id} = 'floor_rec_' || {c:id}{touch}
			WHERE {c:id} = ANY($1) AND {c:status} = {w:pending} AND {c:op_key} LIKE '`+FloorPrefix+`found-%'`), ids)
		if err != nil {
			return fmt.Errorf("floor: done: %w", err)
		}
		done = int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, table.SQL(`
			WITH moved AS (
				UPDATE {T} SET {c:status} = {w:review}{touch}
				WHERE {c:id} = ANY($1) AND {c:status} = {w:pending}
				RETURNING {c:id}::bigint AS id, {c:op_key}::text AS op_key, {c:provider}::text AS provider,
				          {c:workflow}::text AS workflow, {c:action}::text AS action, {c:first_attempt_at} AS first_attempt_at
			), opened AS (
				INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
				SELECT id, op_key,
				       CASE split_part(op_key, '-', 2) WHEN 'nf' THEN 'not_found'
				            WHEN 'mismatch' THEN 'payload_mismatch' ELSE 'multiple_matches' END,
				       'bench-owner', 'normal', now() + interval '4 hours',
				       jsonb_build_object('provider', provider, 'workflow', workflow, 'action', action,
				                          'op_key', op_key, 'first_attempt_at', first_attempt_at, 'records', '[]'::jsonb)
				FROM moved
				RETURNING id
			)
			INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
			SELECT id, 'opened', 'sweeper', 'ticket:' || id || ':opened' FROM opened`), ids)
		if err != nil {
			return fmt.Errorf("floor: review: %w", err)
		}
		review = int(tag.RowsAffected())
		return nil
	})
	return done, review, err
}
