package ledger

import (
	"context"
	"fmt"
	"time"
)

// Backlog counts provider's operations written (created) at or before
// until — now, by the database's clock, when until is zero: settled, those
// settled (done or failed) at or after since; pending, those pending now.
// It is what became of a provider's backlog since an outage began. The
// pending count reads the provider's pending operations
// (operations_pending_stale_idx); the settled count has no index of its own
// and reads the provider's operations.
func (s *Store) Backlog(ctx context.Context, provider string, since, until time.Time) (settled, pending int, err error) {
	var upTo *time.Time
	if !until.IsZero() {
		upTo = &until
	}
	err = s.db.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM ledger.operations WHERE provider = $1
			   AND status IN ('done', 'failed') AND updated_at >= $2
			   AND created_at <= coalesce($3::timestamptz, now())),
			(SELECT count(*) FROM ledger.operations WHERE provider = $1 AND status = 'pending'
			   AND created_at <= coalesce($3::timestamptz, now()))`, provider, since, upTo).Scan(&settled, &pending)
	if err != nil {
		return 0, 0, fmt.Errorf("count the backlog of %s: %w", provider, err)
	}
	return settled, pending, nil
}
