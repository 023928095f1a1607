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
func (t *Table) UnsettledCountsQuery() string { return t.sql.unsettledCounts }

// OldestPendingQuery reads each provider's oldest dated pending operation
// ($1, $2 as in [UnsettledCountsQuery]) from operations_pending_stale_idx.
func (t *Table) OldestPendingQuery() string { return t.sql.oldestPending }

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
		{&st.Operations, "count unsettled operations", s.t.sql.unsettledCounts, []any{known, other}},
		{&st.Settled, "estimate settled operations", s.t.sql.settledEstimate, nil},
	} {
		rows, err := s.db.Query(ctx, q.query, q.args...)
		if err != nil {
			return Stats{}, fmt.Errorf("%s: %w", q.what, err)
		}
		if *q.into, err = pgx.CollectRows(rows, pgx.RowToStructByPos[StatusCount]); err != nil {
			return Stats{}, fmt.Errorf("%s: %w", q.what, err)
		}
	}
	rows, err := s.db.Query(ctx, s.t.sql.oldestPending, known, other)
	if err != nil {
		return Stats{}, fmt.Errorf("oldest pending operations: %w", err)
	}
	if st.OldestPending, err = pgx.CollectRows(rows, pgx.RowToStructByPos[PendingAge]); err != nil {
		return Stats{}, fmt.Errorf("oldest pending operations: %w", err)
	}
	return st, nil
}
