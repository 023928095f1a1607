package benchkit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// Mix is how the stale operations of a filled ledger divide between the
// sim provider's outcomes, in percent; their op_keys start with
// "found-", "nf-", "mismatch-" and "many-", which [SimRules] maps.
type Mix struct{ Found, NotFound, Mismatch, Many int }

// DefaultMix is 70% found, 20% not found, 5% payload mismatch, 5% several
// records.
var DefaultMix = Mix{Found: 70, NotFound: 20, Mismatch: 5, Many: 5}

// String describes the mix.
func (m Mix) String() string {
	return fmt.Sprintf("%d%% found, %d%% not found, %d%% mismatch, %d%% many", m.Found, m.NotFound, m.Mismatch, m.Many)
}

// SimRules is the rules block of a sim provider that answers the filled
// ledger's op_keys as the mix says (op_keys no rule matches are not found).
const SimRules = `
[[providers.sim.rules]]
match = "found-*"
outcome = "found"
[[providers.sim.rules]]
match = "mismatch-*"
outcome = "mismatch"
[[providers.sim.rules]]
match = "many-*"
outcome = "many"
`

// Fill is what [FillLedger] wrote.
type Fill struct {
	Rows, Stale int
	Elapsed     time.Duration
}

// FillLedger inserts rows operations of provider "sim", in one INSERT …
// SELECT generate_series: a fraction stale (rounded to a thousandth,
// spread evenly over the ids) pending and first attempted over an hour
// ago, with outcomes as mix says; the rest done, each with a record of its
// own. It then analyzes the table, as autovacuum would.
// table is ledger.operations or an adopted table ([AdoptedTable]): the
// rows are the same either way, in the table's names and words.
func FillLedger(ctx context.Context, db *pgx.Conn, table *ledger.Table, rows int, stale float64, mix Mix) (Fill, error) {
	perMille := int(math.Round(stale * 1000))
	start := time.Now()
	_, err := db.Exec(ctx, insertSQL(table, map[string]string{
		"op_key": `CASE WHEN s.stale THEN
		           CASE WHEN i % 100 < $3 THEN 'found'
		                WHEN i % 100 < $3 + $4 THEN 'nf'
		                WHEN i % 100 < $3 + $4 + $5 THEN 'mismatch'
		                ELSE 'many' END
		       ELSE 'ok' END || '-' || i`,
		"workflow": "'bench'", "provider": "'sim'", "action": "'send_email'",
		"recipient":          "'customer-' || i || '@example.com'",
		"payload_hash":       "encode(sha256(convert_to(i::text, 'UTF8')), 'hex')",
		"status":             "CASE WHEN s.stale THEN {w:pending} ELSE {w:done} END",
		"provider_record_id": "CASE WHEN s.stale THEN NULL ELSE 'rec_' || i END",
		"first_attempt_at":   "now() - interval '1 hour' - i * interval '1 millisecond'",
		"last_attempt_at":    "now() - interval '1 hour' - i * interval '1 millisecond'",
	}, "FROM generate_series(1, $1::int) AS i, LATERAL (SELECT i % 1000 < $2 AS stale) AS s"),
		rows, perMille, mix.Found, mix.NotFound, mix.Mismatch)
	if err != nil {
		return Fill{}, fmt.Errorf("fill ledger: %w", err)
	}
	if _, err := db.Exec(ctx, "ANALYZE "+table.Name()); err != nil {
		return Fill{}, err
	}
	f := Fill{Rows: rows, Elapsed: time.Since(start)}
	err = db.QueryRow(ctx, table.SQL("SELECT count(*) FROM {T} WHERE {c:status} = {w:pending}")).Scan(&f.Stale)
	return f, err
}

// Settlement is what became of the stale operations.
type Settlement struct {
	Pending, Done, Review int
	// P50 and P99 are per-operation latencies from the created_at of the
	// first lookup job that held it (the sweep saw the row) to the operation's updated_at (the
	// transaction that wrote the outcome — ledger row and ticket alike).
	P50, P99 time.Duration
}

// Settled reads what became of the stale operations (op_keys neither
// "ok-…" nor the history's).
func Settled(ctx context.Context, db *pgx.Conn, table *ledger.Table) (Settlement, error) {
	var s Settlement
	err := db.QueryRow(ctx, table.SQL(`SELECT count(*) FILTER (WHERE {c:status} = {w:pending}),
	                                count(*) FILTER (WHERE {c:status} = {w:done}),
	                                count(*) FILTER (WHERE {c:status} = {w:review})
		FROM {T} WHERE {c:op_key} NOT LIKE 'ok-%' AND {c:op_key} NOT LIKE '`+HistoryPrefix+`%'`)).Scan(&s.Pending, &s.Done, &s.Review)
	if err != nil {
		return s, err
	}
	var p50, p99 *float64
	err = db.QueryRow(ctx, table.SQL(`
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d), percentile_cont(0.99) WITHIN GROUP (ORDER BY d)
		FROM (SELECT extract(epoch FROM {c:o.updated_at} - min(q.created_at)) AS d
		      FROM (SELECT j.created_at, (op->>'id')::bigint AS id
		            FROM sweeper.river_job j, jsonb_array_elements(j.args->'ops') AS op WHERE j.kind = 'lookup_batch') AS q
		      JOIN {T} o ON {c:o.id} = q.id
		      WHERE {c:o.status} <> {w:pending}
		      GROUP BY {c:o.id}, {c:o.updated_at}) AS settled`)).Scan(&p50, &p99)
	if err != nil {
		return s, err
	}
	if p50 != nil && p99 != nil {
		s.P50 = time.Duration(*p50 * float64(time.Second))
		s.P99 = time.Duration(*p99 * float64(time.Second))
	}
	return s, nil
}

// Duplicate is work the database shows was done more than once.
type Duplicate struct {
	// HandedOn counts operations held by more than one lookup job,
	// beyond the first.
	HandedOn int
	// Events counts "opened" events beyond one per ticket; Outbox outbox
	// rows beyond one per dedupe key.
	Events, Outbox int
}

// Duplicates reads what work was done twice.
func Duplicates(ctx context.Context, db *pgx.Conn) (Duplicate, error) {
	var d Duplicate
	err := db.QueryRow(ctx, `SELECT
		(SELECT count(*) - count(DISTINCT op->>'id') FROM sweeper.river_job j, jsonb_array_elements(j.args->'ops') AS op
		 WHERE j.kind = 'lookup_batch'),
		(SELECT count(*) - count(DISTINCT ticket_id) FROM sweeper.ticket_events WHERE kind = 'opened'),
		(SELECT count(*) - count(DISTINCT dedupe_key) FROM sweeper.outbox)`).Scan(&d.HandedOn, &d.Events, &d.Outbox)
	return d, err
}
