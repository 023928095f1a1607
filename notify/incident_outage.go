package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/sweeper/sweeper/ledger"
)

// CountMovedToReview adds n to the operations moved to review after
// maxOutage during provider's open incident, in db's transaction (the one
// that moved them), so that the incident's messages say so at their next
// refresh. A provider with no open incident changes nothing.
func CountMovedToReview(ctx context.Context, db ledger.DB, provider string, n int, maxOutage time.Duration) error {
	if n <= 0 {
		return nil
	}
	if _, err := db.Exec(ctx, `UPDATE sweeper.incidents
		SET moved_to_review = moved_to_review + $2, moved_after = $3::interval, refresh_final_at = NULL
		WHERE provider = $1 AND ended_at IS NULL`, provider, n, maxOutage); err != nil {
		return fmt.Errorf("count the operations of %s moved to review on its incident: %w", provider, err)
	}
	return nil
}
