package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Stats is what the ledger holds, counted for the state gauges.
type Stats struct {
	// Operations counts the operations by provider and status.
	Operations []StatusCount
	// OldestPending is, per provider, the age of its oldest pending
	// operation with a dated first attempt.
	OldestPending []PendingAge
}

// StatusCount is how many operations of Provider are in Status.
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

// Stats counts the ledger's operations by provider and status, and reads
// the age of each provider's oldest pending operation, in two statements.
// The provider column is written by workflows: a provider not among known
// is counted under other, so that a typo in a workflow adds one name, not
// one per typo.
func (s *Store) Stats(ctx context.Context, known []string, other string) (Stats, error) {
	var st Stats
	rows, err := s.db.Query(ctx, `SELECT CASE WHEN provider = ANY($1) THEN provider ELSE $2 END,
			status, count(*)
		FROM ledger.operations GROUP BY 1, 2`, known, other)
	if err != nil {
		return Stats{}, fmt.Errorf("count operations: %w", err)
	}
	if st.Operations, err = pgx.CollectRows(rows, pgx.RowToStructByPos[StatusCount]); err != nil {
		return Stats{}, fmt.Errorf("count operations: %w", err)
	}
	rows, err = s.db.Query(ctx, `SELECT CASE WHEN provider = ANY($1) THEN provider ELSE $2 END,
			extract(epoch FROM now() - min(first_attempt_at))::float8
		FROM ledger.operations WHERE status = 'pending' AND first_attempt_at > '-infinity' GROUP BY 1`, known, other)
	if err != nil {
		return Stats{}, fmt.Errorf("oldest pending operations: %w", err)
	}
	if st.OldestPending, err = pgx.CollectRows(rows, pgx.RowToStructByPos[PendingAge]); err != nil {
		return Stats{}, fmt.Errorf("oldest pending operations: %w", err)
	}
	return st, nil
}
