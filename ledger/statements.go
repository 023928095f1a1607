package ledger

import (
	"fmt"
	"strings"
)

// statements are every statement of the package, rendered for one table
// ([Table.sqlFor]). The sources below write {T}, {c:…}, {w:…}, {ops} and
// {touch} where the mapping decides a name; on [NativeTable] they render
// to sweeper's own names.
type statements struct {
	claim, transition, holderOfKey, holderOf, holdersOf      string
	countStale, countPending, stalePending, compareAndSet    string
	getByIDs, staleOther, futureDated, getByID, getByOpKey   string
	lookalikes, moveToDone, moveToReview, sharedRecords      string
	unsettledCounts, oldestPending, settledEstimate, backlog string
	operations, settled, knownKeys                           string
	claimArgs                                                []int
}

func (t *Table) render() statements {
	claim, claimArgs := t.claimSQL()
	return statements{
		claim:           claim,
		claimArgs:       claimArgs,
		transition:      t.sqlFor(transitionSQL),
		holderOfKey:     t.sqlFor(holderOfKeySQL),
		holderOf:        t.sqlFor(holderOfSQL),
		holdersOf:       t.sqlFor(holdersOfSQL),
		countStale:      t.sqlFor(countStaleSQL),
		countPending:    t.sqlFor(countPendingSQL),
		stalePending:    t.sqlFor(stalePendingSQL),
		compareAndSet:   t.sqlFor(compareAndSetSQL),
		getByIDs:        t.sqlFor(getByIDsSQL),
		staleOther:      t.sqlFor(staleOtherSQL),
		futureDated:     t.sqlFor(futureDatedSQL),
		getByID:         t.sqlFor(`SELECT {ops} FROM {T} WHERE {c:id} = $1`),
		getByOpKey:      t.sqlFor(`SELECT {ops} FROM {T} WHERE {c:op_key} = $1`),
		lookalikes:      t.sqlFor(lookalikesSQL),
		moveToDone:      t.sqlFor(moveToDoneSQL),
		moveToReview:    t.sqlFor(moveToReviewSQL),
		sharedRecords:   t.sqlFor(sharedRecordsSQL),
		unsettledCounts: t.sqlFor(unsettledCountsSQL),
		oldestPending:   t.sqlFor(oldestPendingSQL),
		settledEstimate: t.settledEstimateSQL(),
		backlog:         t.sqlFor(backlogSQL),
		operations:      t.operationsSQL(),
		settled:         t.sqlFor(settledSQL),
		knownKeys:       t.sqlFor(`SELECT {c:op_key}::text FROM {T} WHERE {c:op_key} = ANY($1::text[])`),
	}
}

// operationsSQL is [Table.OperationsSQL]: on an adopted table, its
// columns renamed to sweeper's and its words read as sweeper's statuses.
func (t *Table) operationsSQL() string {
	if t.Native() {
		return `(SELECT id, provider, status, created_at FROM ledger.operations)`
	}
	return t.sqlFor(`(SELECT {c:id}::bigint AS id, {c:provider}::text AS provider, ` +
		`CASE {c:status} WHEN {w:pending} THEN 'pending' WHEN {w:done} THEN 'done' ` +
		`WHEN {w:review} THEN 'review' WHEN {w:failed} THEN 'failed' END AS status, ` +
		`{c:created_at} AS created_at FROM {T})`)
}

// claimSQL inserts a pending operation into the columns the table has,
// and says which of [Store.Claim]'s eight values (op_key, workflow,
// provider, action, source_id, recipient, payload_hash, payload) its
// parameters are, in order.
func (t *Table) claimSQL() (string, []int) {
	var cols, vals []string
	var args []int
	for _, c := range []struct {
		key, value string
		arg        int // the value's position among Claim's, -1 for none
	}{
		{"op_key", "$%d", 0}, {"workflow", "$%d", 1}, {"provider", "$%d", 2}, {"action", "$%d", 3},
		{"source_id", "nullif($%d, '')", 4}, {"recipient", "nullif($%d, '')", 5}, {"payload_hash", "$%d", 6},
		{"payload", "$%d::jsonb", 7}, {"status", "{w:pending}", -1}, {"attempts", "1", -1},
		{"first_attempt_at", "now()", -1}, {"last_attempt_at", "now()", -1},
	} {
		col := t.columns[c.key]
		if col == "" {
			continue
		}
		value := c.value
		if c.arg >= 0 {
			args = append(args, c.arg)
			value = fmt.Sprintf(value, len(args))
		}
		cols, vals = append(cols, col), append(vals, value)
	}
	if t.Native() {
		// ledger.operations' status defaults to pending: the statement
		// stays the one workflows are shown.
		cols, vals = without(cols, vals, t.columns["status"])
	}
	return t.sqlFor(`INSERT INTO {T} (` + strings.Join(cols, ", ") + `)
		VALUES (` + strings.Join(vals, ", ") + `)
		ON CONFLICT ({c:op_key}) DO NOTHING
		RETURNING {ops}`), args
}

// without leaves the column col and its value out of cols and vals.
func without(cols, vals []string, col string) ([]string, []string) {
	var c, v []string
	for i := range cols {
		if cols[i] != col {
			c, v = append(c, cols[i]), append(v, vals[i])
		}
	}
	return c, v
}

// settledEstimateSQL estimates the done and failed operations from the
// catalog: the table's row count times each status's frequency in its
// status column, as ANALYZE last sampled them. It reads no row of the
// ledger.
func (t *Table) settledEstimateSQL() string {
	col, _ := t.Column("status")
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	return t.sqlFor(`SELECT '', CASE s.status WHEN {w:done} THEN 'done' ELSE 'failed' END,
		round(greatest(c.reltuples, 0) * s.freq)::bigint
	FROM pg_class c
	JOIN pg_stats st ON st.schemaname = ` + lit(t.schema) + ` AND st.tablename = ` + lit(t.relname) + ` AND st.attname = ` + lit(col) + `
	CROSS JOIN LATERAL unnest(st.most_common_vals::text::text[], st.most_common_freqs) AS s(status, freq)
	WHERE c.oid = ` + lit(t.name) + `::regclass AND c.reltuples >= 0 AND s.status IN ({w:done}, {w:failed})`)
}

const transitionSQL = `
		UPDATE {T} o
		SET {c:status} = $3, {c:provider_record_id} = coalesce(nullif($4, ''), {c:o.provider_record_id}){touch}
		WHERE {c:o.op_key} = $1 AND {c:o.status} = $2
		  AND ($4 = '' OR NOT EXISTS (SELECT 1 FROM {T} h
		                              WHERE {c:h.provider_record_id} = $4 AND {c:h.id} <> {c:o.id}
		                                AND {c:h.provider} = ANY(sweeper.record_namespace_blocks({c:o.provider}))))
		RETURNING {ops:o}`

const holderOfKeySQL = `SELECT coalesce({c:h.op_key}::text, '') FROM {T} o
		JOIN {T} h ON {c:h.provider_record_id} = $2 AND {c:h.id} <> {c:o.id}
		 AND {c:h.provider} = ANY(sweeper.record_namespace_blocks({c:o.provider}))
		WHERE {c:o.op_key} = $1 ORDER BY {c:h.id} LIMIT 1`

const holderOfSQL = `SELECT coalesce({c:op_key}::text, '') FROM {T}
		WHERE {c:provider} = ANY(sweeper.record_namespace_blocks($1)) AND {c:provider_record_id} = $2 AND {c:id} <> $3
		ORDER BY {c:id} LIMIT 1`

const holdersOfSQL = `SELECT {c:provider_record_id}::text, {c:id}::bigint, coalesce({c:op_key}::text, '') FROM {T}
		WHERE {c:provider_record_id} = ANY($2::text[]) AND {c:provider} = ANY(sweeper.record_namespace_blocks($1))
		ORDER BY {c:id}`

const countStaleSQL = `SELECT count(*) FROM {T}
		WHERE {c:status} = {w:pending} AND {c:provider} = $1 AND {c:first_attempt_at} < $2`

const countPendingSQL = `SELECT count(*) FROM {T} WHERE {c:provider} = $1 AND {c:status} = {w:pending}`

const stalePendingSQL = `SELECT {ops}
	FROM {T}
	WHERE {c:status} = {w:pending} AND {c:provider} = $1 AND {c:first_attempt_at} < $2
	  AND ({c:first_attempt_at}, {c:id}) > ($3, $4)
	ORDER BY {c:first_attempt_at}, {c:id}
	LIMIT $5`

const compareAndSetSQL = `
		UPDATE {T}
		SET {c:status} = $3, {c:provider_record_id} = coalesce(nullif($4, ''), {c:provider_record_id}){touch}
		WHERE {c:id} = $1 AND {c:status} = $2`

const getByIDsSQL = `SELECT {ops} FROM {T} WHERE {c:id} = ANY($1::bigint[])`

const staleOtherSQL = `SELECT {ops}
		FROM {T}
		WHERE {c:status} = {w:pending} AND coalesce({c:provider} <> ALL($1::text[]), true) AND {c:first_attempt_at} < $2
		  AND ({c:first_attempt_at}, {c:id}) > ($3, $4)
		ORDER BY {c:first_attempt_at}, {c:id}
		LIMIT $5`

const futureDatedSQL = `SELECT {ops}
		FROM {T}
		WHERE {c:status} = {w:pending} AND ({c:first_attempt_at} > $1 OR {c:first_attempt_at} IS NULL)
		  AND (coalesce({c:first_attempt_at}, 'infinity'), {c:id}) > ($2, $3)
		ORDER BY coalesce({c:first_attempt_at}, 'infinity'), {c:id}
		LIMIT $4`

const lookalikesSQL = `SELECT {ops}
	FROM {T}
	WHERE {c:provider} = ANY(sweeper.record_namespace_blocks($1)) AND {c:payload_hash} = $2 AND {c:id} <> $3
	  AND {c:status} IN ({w:pending}, {w:review})
	  AND {c:first_attempt_at} - $5::interval <= $4
	  AND greatest({c:first_attempt_at}, coalesce({c:last_attempt_at}, {c:first_attempt_at})) + $6::interval >= $4
	  AND CASE WHEN $8 THEN length(regexp_replace(coalesce({c:recipient}, ''), '[^0-9]', '', 'g')) < 7
	                        OR right(regexp_replace(coalesce({c:recipient}, ''), '[^0-9]', '', 'g'), 7) = $7
	           ELSE strpos(lower(coalesce({c:recipient}, '')), lower($7)) > 0 END
	ORDER BY {c:first_attempt_at}, {c:id}
	LIMIT $9`

// moveToDoneSQL moves pending rows to done, one per item of the arrays $1
// id, $2 provider record id, $3 op_key, $4 action, $5 recipient ("" for
// none), $6 payload hash; it returns the (1-based) position of each item
// that moved its row.
//
// A row moves only while it is still pending, its identity is the one
// looked up, it names no other record, and no other operation of its
// provider's record namespace (its block, or another block reaching the
// same account) holds the record: one record proves one operation. Of the
// items of one call that claim the same record of one namespace, only the
// first whose row qualifies (as the statement's snapshot shows it) is a
// candidate, so they cannot both win (a unique index would refuse the
// second and abort the batch); of several items for one row, one moves
// it. The conditions on the row are in the outer WHERE, so that a row
// another transaction changed meanwhile is checked again as it now is.
const moveToDoneSQL = `
	UPDATE {T} o SET {c:status} = {w:done}, {c:provider_record_id} = c.record_id{touch}
	FROM (
		SELECT DISTINCT ON (sweeper.record_namespace({c:r.provider}), i.record_id) i.ord, i.id, i.record_id, i.op_key, i.action, i.recipient, i.payload_hash
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
			WITH ORDINALITY AS i(id, record_id, op_key, action, recipient, payload_hash, ord)
		JOIN {T} r ON {c:r.id} = i.id
		WHERE {c:r.status} = {w:pending} AND {c:r.op_key} = i.op_key AND {c:r.action} = i.action
		  AND coalesce({c:r.recipient}, '') = i.recipient AND {c:r.payload_hash} = i.payload_hash
		  AND ({c:r.provider_record_id} IS NULL OR {c:r.provider_record_id} = i.record_id)
		ORDER BY sweeper.record_namespace({c:r.provider}), i.record_id, i.ord
	) c
	WHERE {c:o.id} = c.id AND {c:o.status} = {w:pending}
	  AND {c:o.op_key} = c.op_key AND {c:o.action} = c.action AND coalesce({c:o.recipient}, '') = c.recipient
	  AND {c:o.payload_hash} = c.payload_hash
	  AND ({c:o.provider_record_id} IS NULL OR {c:o.provider_record_id} = c.record_id)
	  AND NOT EXISTS (SELECT 1 FROM {T} other
	                  WHERE {c:other.provider_record_id} = c.record_id AND {c:other.id} <> {c:o.id}
	                    AND {c:other.provider} = ANY(sweeper.record_namespace_blocks({c:o.provider})))
	RETURNING c.ord`

const moveToReviewSQL = `UPDATE {T} SET {c:status} = {w:review}{touch}
		WHERE {c:id} = ANY($1::bigint[]) AND {c:status} = {w:pending}
		RETURNING {c:id}::bigint`

const sharedRecordsSQL = `
		SELECT n.namespace, {c:o.provider_record_id}::text, array_agg(coalesce({c:o.op_key}::text, '') ORDER BY {c:o.id})
		FROM {T} o JOIN sweeper.record_namespaces n ON n.provider = {c:o.provider}
		WHERE {c:o.provider_record_id} IS NOT NULL
		GROUP BY n.namespace, {c:o.provider_record_id}
		HAVING count(*) > 1
		ORDER BY min({c:o.id})
		LIMIT $1`

const unsettledCountsSQL = `SELECT CASE WHEN {c:provider} = ANY($1) THEN {c:provider}::text ELSE $2 END, 'pending', count(*)
	FROM {T} WHERE {c:status} = {w:pending} GROUP BY 1
	UNION ALL
	SELECT CASE WHEN {c:provider} = ANY($1) THEN {c:provider}::text ELSE $2 END, 'review', count(*)
	FROM {T} WHERE {c:status} = {w:review} GROUP BY 1`

const oldestPendingSQL = `SELECT CASE WHEN {c:provider} = ANY($1) THEN {c:provider}::text ELSE $2 END,
		extract(epoch FROM now() - min({c:first_attempt_at}))::float8
	FROM {T} WHERE {c:status} = {w:pending} AND {c:first_attempt_at} > '-infinity' GROUP BY 1`

const backlogSQL = `SELECT
		(SELECT count(*) FROM {T} WHERE {c:provider} = $1
		   AND {c:status} IN ({w:done}, {w:failed}) AND {c:updated_at} >= $2
		   AND {c:created_at} <= coalesce($3::timestamptz, now())),
		(SELECT count(*) FROM {T} WHERE {c:provider} = $1 AND {c:status} = {w:pending}
		   AND {c:created_at} <= coalesce($3::timestamptz, now()))`

// settledSQL reads a provider's settled rows by settling time, in keyset
// pages: $1 provider, $2 from (inclusive), $3 until (exclusive), $4/$5 the
// cursor, $6 the limit. operations_settled_idx serves it.
const settledSQL = `SELECT {ops}
	FROM {T}
	WHERE {c:provider} = $1 AND {c:status} IN ({w:done}, {w:failed})
	  AND {c:updated_at} >= $2 AND {c:updated_at} < $3
	  AND ({c:updated_at}, {c:id}) > ($4, $5)
	ORDER BY {c:updated_at}, {c:id}
	LIMIT $6`
