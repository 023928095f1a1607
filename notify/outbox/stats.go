package outbox

import (
	"context"
	"fmt"
	"strings"

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
	// ByReceiver holds the same three counts per receiver: every age
	// bucket of every one of [Receivers] present.
	ByReceiver struct {
		Rows, PendingByAge, ParkedByError []ReceiverCount
	}
}

// Count is how many rows share Label: a state, an age bucket or an
// error code.
type Count struct {
	Label string
	Rows  int64
}

// ReceiverCount is how many rows of Receiver share Label.
type ReceiverCount struct {
	Receiver string
	Label    string
	Rows     int64
}

// Stats counts the outbox's rows, in three statements.
func (o *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	for _, q := range []struct {
		into  *[]ReceiverCount
		sum   *[]Count
		what  string
		query string
	}{
		{&st.ByReceiver.Rows, &st.Rows, "outbox rows by state", `SELECT receiver, state, count(*) FROM sweeper.outbox GROUP BY 1, 2 ORDER BY 1, 2`},
		{&st.ByReceiver.PendingByAge, &st.PendingByAge, "pending outbox rows by age", `SELECT r.receiver, b.age, count(o.age)
			FROM unnest($1::text[]) AS r(receiver)
			CROSS JOIN (VALUES (1, '<1m'), (2, '1m-10m'), (3, '10m-1h'), (4, '>1h')) AS b(i, age)
			LEFT JOIN (SELECT receiver, CASE
					WHEN now() - since < interval '1 minute' THEN '<1m'
					WHEN now() - since < interval '10 minutes' THEN '1m-10m'
					WHEN now() - since < interval '1 hour' THEN '10m-1h'
					ELSE '>1h' END AS age
				FROM (SELECT receiver, greatest(created_at, replayed_at) AS since FROM sweeper.outbox WHERE state = 'pending') AS p) AS o
			ON o.age = b.age AND o.receiver = r.receiver GROUP BY r.receiver, b.i, b.age ORDER BY b.i, r.receiver`},
		{&st.ByReceiver.ParkedByError, &st.ParkedByError, "parked outbox rows by error", `SELECT receiver, coalesce(error_code, 'unknown'), count(*)
			FROM sweeper.outbox WHERE state = 'parked' GROUP BY 1, 2 ORDER BY 1, 2`},
	} {
		var args []any
		if strings.Contains(q.query, "$1") {
			args = append(args, Receivers)
		}
		rows, err := o.db.Query(ctx, q.query, args...)
		if err != nil {
			return Stats{}, fmt.Errorf("count %s: %w", q.what, err)
		}
		if *q.into, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ReceiverCount]); err != nil {
			return Stats{}, fmt.Errorf("count %s: %w", q.what, err)
		}
		*q.sum = sumReceivers(*q.into)
	}
	return st, nil
}

// sumReceivers adds up counts by label, across receivers, in the order
// each label first comes.
func sumReceivers(counts []ReceiverCount) []Count {
	var out []Count
	at := map[string]int{}
	for _, c := range counts {
		i, ok := at[c.Label]
		if !ok {
			i = len(out)
			at[c.Label] = i
			out = append(out, Count{Label: c.Label})
		}
		out[i].Rows += c.Rows
	}
	return out
}
