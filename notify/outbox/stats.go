package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Stats is what the outbox holds, counted for the state gauges.
type Stats struct {
	// Rows counts the rows by state; a state without rows is left out.
	Rows []Count
	// PendingByAge counts the pending rows by time since written, or since
	// replayed: <1m, 1m-10m, 10m-1h and >1h, in that order, every bucket
	// present (0 when empty) so that an alert on one has a series.
	PendingByAge []Count
	// ParkedByError counts the parked rows by error code ("unknown" for a
	// row without one).
	ParkedByError []Count
}

// Count is how many rows share Label: a state, an age bucket or an
// error code.
type Count struct {
	Label string
	Rows  int64
}

// Stats counts the outbox's rows, in three statements.
func (o *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	for _, q := range []struct {
		into  *[]Count
		what  string
		query string
	}{
		{&st.Rows, "outbox rows by state", `SELECT state, count(*) FROM sweeper.outbox GROUP BY 1`},
		{&st.PendingByAge, "pending outbox rows by age", `SELECT b.age, count(o.age)
			FROM (VALUES (1, '<1m'), (2, '1m-10m'), (3, '10m-1h'), (4, '>1h')) AS b(i, age)
			LEFT JOIN (SELECT CASE
					WHEN now() - since < interval '1 minute' THEN '<1m'
					WHEN now() - since < interval '10 minutes' THEN '1m-10m'
					WHEN now() - since < interval '1 hour' THEN '10m-1h'
					ELSE '>1h' END AS age
				FROM (SELECT greatest(created_at, replayed_at) AS since FROM sweeper.outbox WHERE state = 'pending') AS p) AS o
			ON o.age = b.age GROUP BY b.i, b.age ORDER BY b.i`},
		{&st.ParkedByError, "parked outbox rows by error", `SELECT coalesce(error_code, 'unknown'), count(*)
			FROM sweeper.outbox WHERE state = 'parked' GROUP BY 1`},
	} {
		rows, err := o.db.Query(ctx, q.query)
		if err != nil {
			return Stats{}, fmt.Errorf("count %s: %w", q.what, err)
		}
		if *q.into, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Count]); err != nil {
			return Stats{}, fmt.Errorf("count %s: %w", q.what, err)
		}
	}
	return st, nil
}
