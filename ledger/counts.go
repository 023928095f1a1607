package ledger

import (
	"context"
	"fmt"
	"time"
)

// Backlog counts provider's operations written (created) at or before
// until — now, by the database's clock, when until is zero: settled, those
// settled (done or failed) at or after since; pending, those pending now.
// It is what became of a provider's backlog since an outage began. Both
// counts read only what they count: the pending count the provider's
// pending operations (operations_pending_stale_idx), the settled count the
// provider's operations settled since since (a range of
// operations_settled_idx), never the provider's settled history before it.
func (s *Store) Backlog(ctx context.Context, provider string, since, until time.Time) (settled, pending int, err error) {
	var upTo *time.Time
	if !until.IsZero() {
		upTo = &until
	}
	err = s.db.QueryRow(ctx, s.t.sql.backlog, provider, since, upTo).Scan(&settled, &pending)
	if err != nil {
		return 0, 0, fmt.Errorf("count the backlog of %s: %w", provider, err)
	}
	return settled, pending, nil
}

// BacklogQuery is [Store.Backlog]'s statement, for tests that EXPLAIN it:
// $1 provider, $2 since, $3 until (NULL: now).
func (t *Table) BacklogQuery() string { return t.sql.backlog }
