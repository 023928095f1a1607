package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Stats is what the ledger holds, counted for the state gauges. Every
// figure costs what the unsettled operations cost, never what the settled
// history does: a ledger of ten million settled rows is read as fast as one
// of ten thousand.
type Stats struct {
	// Operations counts the unsettled operations — pending and review —
	// by provider and status, exactly.
	Operations []StatusCount
	// OldestPending is, per provider, the age of its oldest pending
	// operation with a dated first attempt.
	OldestPending []PendingAge
	// Settled estimates the settled history — done and failed — by status,
	// from PostgreSQL's statistics of the table (its row count and the
	// status column's most common values, as the last ANALYZE or
	// autovacuum took them); empty before the table was first analyzed.
	Settled []StatusCount
}

// StatusCount is how many operations of Provider are in Status; Provider
// is empty in an estimate of the whole ledger.
type StatusCount struct {
	Provider string
	Status   Status
	Count    int64
}

// PendingAge is how long ago, in seconds by the database's clock, the
// oldest pending operation of Provider was first attempted.
type PendingAge struct {
	Provider string
	Seconds  float64
}

// UnsettledCountsQuery counts the pending and review operations by provider
// ($1 the known providers, $2 the name the others are counted under): an
// index-only scan of operations_pending_stale_idx and one of
// operations_review_idx.
const UnsettledCountsQuery = `SELECT CASE WHEN provider = ANY($1) THEN provider ELSE $2 END, 'pending', count(*)
	FROM ledger.operations WHERE status = 'pending' GROUP BY 1
	UNION ALL
	SELECT CASE WHEN provider = ANY($1) THEN provider ELSE $2 END, 'review', count(*)
	FROM ledger.operations WHERE status = 'review' GROUP BY 1`

// OldestPendingQuery reads each provider's oldest dated pending operation
// ($1, $2 as in [UnsettledCountsQuery]) from operations_pending_stale_idx.
const OldestPendingQuery = `SELECT CASE WHEN provider = ANY($1) THEN provider ELSE $2 END,
		extract(epoch FROM now() - min(first_attempt_at))::float8
	FROM ledger.operations WHERE status = 'pending' AND first_attempt_at > '-infinity' GROUP BY 1`

// SettledEstimateQuery estimates the done and failed operations from the
// catalog: the table's row count times each status's frequency, as
// ANALYZE last sampled them. It reads no row of the ledger.
const SettledEstimateQuery = `SELECT '', s.status, round(greatest(c.reltuples, 0) * s.freq)::bigint
	FROM pg_class c
	JOIN pg_stats st ON st.schemaname = 'ledger' AND st.tablename = 'operations' AND st.attname = 'status'
	CROSS JOIN LATERAL unnest(st.most_common_vals::text::text[], st.most_common_freqs) AS s(status, freq)
	WHERE c.oid = 'ledger.operations'::regclass AND c.reltuples >= 0 AND s.status IN ('done', 'failed')`

// Stats counts the ledger's unsettled operations by provider and status,
// reads the age of each provider's oldest pending operation, and estimates
// the settled history, in three statements. The provider column is written
// by workflows: a provider not among known is counted under other, so that
// a typo in a workflow adds one name, not one per typo. Exact counts of the
// settled history are not read here: grouping ten million rows every
// refresh would cost seconds of a core; sweeper_operations_settled_total
// counts what each process settles, and SQL answers an exact question on
// demand.
func (s *Store) Stats(ctx context.Context, known []string, other string) (Stats, error) {
	var st Stats
	for _, q := range []struct {
		into  *[]StatusCount
		what  string
		query string
		args  []any
	}{
		{&st.Operations, "count unsettled operations", UnsettledCountsQuery, []any{known, other}},
		{&st.Settled, "estimate settled operations", SettledEstimateQuery, nil},
	} {
		rows, err := s.db.Query(ctx, q.query, q.args...)
		if err != nil {
			return Stats{}, fmt.Errorf("%s: %w", q.what, err)
		}
		if *q.into, err = pgx.CollectRows(rows, pgx.RowToStructByPos[StatusCount]); err != nil {
			return Stats{}, fmt.Errorf("%s: %w", q.what, err)
		}
	}
	rows, err := s.db.Query(ctx, OldestPendingQuery, known, other)
	if err != nil {
		return Stats{}, fmt.Errorf("oldest pending operations: %w", err)
	}
	if st.OldestPending, err = pgx.CollectRows(rows, pgx.RowToStructByPos[PendingAge]); err != nil {
		return Stats{}, fmt.Errorf("oldest pending operations: %w", err)
	}
	return st, nil
}
