package benchkit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HistoryPrefix starts the op_keys of the settled history [FillHistory]
// writes; [Settled] leaves them out.
const HistoryPrefix = "hist-"

// HistoryHashes is how many distinct payload hashes the history's rows
// share, so that a look-alike check whose hash matches is one that would
// read a fiftieth of the history if the index did not keep it away.
const HistoryHashes = 50

// HistoryHash is the payload hash of the history rows numbered i mod
// [HistoryHashes].
func HistoryHash(i int) string { return fmt.Sprintf("%064x", i%HistoryHashes) }

// historyChunk is how many history rows one INSERT writes.
const historyChunk = 1_000_000

// FillHistory writes n settled operations of provider "sim" — nine in ten
// done, each with a record of its own, one in ten failed — first
// attempted and settled 30 to 120 days ago, as the bulk of a real ledger
// is, then vacuums and analyzes the table, as autovacuum would have. It
// writes set-based, in chunks of a million rows; as a superuser it turns
// the ledger's triggers off for the fill (the rows are valid as written)
// and builds the secondary indexes once after it instead of row by row.
func FillHistory(ctx context.Context, db *pgx.Conn, n int) (time.Duration, error) {
	start := time.Now()
	if n <= 0 {
		return 0, nil
	}
	var super bool
	if err := db.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		return 0, err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
		return 0, err
	}
	var rebuild []string
	if super {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return 0, err
		}
		rows, err := tx.Query(ctx, `SELECT pg_get_indexdef(i.indexrelid), i.indexrelid::regclass::text FROM pg_index i
			WHERE i.indrelid = 'ledger.operations'::regclass
			  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`)
		if err != nil {
			return 0, err
		}
		var def, name string
		var drop []string
		if _, err := pgx.ForEachRow(rows, []any{&def, &name}, func() error {
			rebuild, drop = append(rebuild, def), append(drop, name)
			return nil
		}); err != nil {
			return 0, err
		}
		for _, name := range drop {
			if _, err := tx.Exec(ctx, "DROP INDEX "+name); err != nil {
				return 0, err
			}
		}
	}
	for from := 1; from <= n; from += historyChunk {
		to := min(n, from+historyChunk-1)
		_, err := tx.Exec(ctx, `
			INSERT INTO ledger.operations (op_key, workflow, provider, action, recipient, payload_hash, status,
				provider_record_id, first_attempt_at, last_attempt_at, created_at, updated_at)
			SELECT '`+HistoryPrefix+`' || i, 'bench', 'sim', 'send_email', 'customer-' || i || '@example.com',
				lpad(to_hex(i % `+fmt.Sprint(HistoryHashes)+`), 64, '0'),
				CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'done' END,
				CASE WHEN i % 10 = 0 THEN NULL ELSE 'hist_rec_' || i END, t, t, t, t + interval '1 minute'
			FROM generate_series($1::int, $2::int) AS i,
				LATERAL (SELECT now() - interval '120 days' + (i::float8 / $3) * interval '90 days') AS a(t)`,
			from, to, n)
		if err != nil {
			return 0, fmt.Errorf("fill the settled history: %w", err)
		}
	}
	for _, def := range rebuild {
		if _, err := tx.Exec(ctx, def); err != nil {
			return 0, fmt.Errorf("%s: %w", def, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	if _, err := db.Exec(ctx, "VACUUM (ANALYZE) ledger.operations"); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
