package ledger

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Clock is the database's clock, read through the process's own: local
// time plus the offset to PostgreSQL's clock_timestamp(), measured at
// [Clock.Sync]. Every time-based decision — the stale cutoff, settle
// windows, lookup windows, ticket deadlines — is taken by it, so that
// replicas whose clocks disagree by minutes still decide alike, and agree
// with the first_attempt_at the database wrote with now(). It costs one
// query per sync, not one per decision.
type Clock struct {
	db     DB
	local  func() time.Time
	offset atomic.Int64 // nanoseconds to add to local time
}

// NewClock returns a clock over db's; local is the process's clock
// (time.Now when nil). It reads local time until the first Sync.
func NewClock(db DB, local func() time.Time) *Clock {
	if local == nil {
		local = time.Now
	}
	return &Clock{db: db, local: local}
}

// Now is the database's time, as of the last sync.
func (c *Clock) Now() time.Time {
	return c.local().Add(time.Duration(c.offset.Load())).UTC()
}

// Offset is what Now adds to the local clock.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Sync measures the offset: the database's clock_timestamp() against the
// midpoint of the local clock around the round trip. It returns the
// offset, or the query's error (the previous offset is kept).
func (c *Clock) Sync(ctx context.Context) (time.Duration, error) {
	before := c.local()
	var db time.Time
	if err := c.db.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
		return c.Offset(), fmt.Errorf("read the database's clock: %w", err)
	}
	after := c.local()
	mid := before.Add(after.Sub(before) / 2)
	offset := db.Sub(mid)
	c.offset.Store(int64(offset))
	return offset, nil
}

// Run syncs every interval until ctx ends; a failed sync keeps the last
// offset (a clock drifts by milliseconds an hour, not minutes).
func (c *Clock) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Sync(ctx) //nolint:errcheck // kept: the last offset stands
		}
	}
}
