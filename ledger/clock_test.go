package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestClockFollowsTheDatabase: a process whose clock is minutes off reads
// the database's time once synced.
func TestClockFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	for _, skew := range []time.Duration{0, 7 * time.Minute, -3 * time.Hour} {
		clock := ledger.NewClock(tx, func() time.Time { return time.Now().Add(skew) })
		if _, err := clock.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		var db time.Time
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
			t.Fatal(err)
		}
		if d := clock.Now().Sub(db).Abs(); d > time.Second {
			t.Errorf("skew %s: clock says %s, the database %s (%s apart)", skew, clock.Now(), db, d)
		}
	}
}
