package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestMatchingIsByKeyOnlyWhenTheQueryReturnsOpKey: a query matches by key
// only when it returns an op_key column and binds @op_key (or @op_keys);
// binding @op_key alone, as in a WHERE clause that also admits keyless
// rows, is resemblance. An @op_key in a comment or a string binds nothing.
func TestMatchingIsByKeyOnlyWhenTheQueryReturnsOpKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, query string
		byKey       bool
	}{
		{"binds @op_key, returns no op_key", "SELECT id FROM sent WHERE op_key = @op_key", false},
		{"binds @op_key or admits keyless rows, returns no op_key",
			"SELECT id, created_at, body_hash AS payload_hash, recipient FROM sent WHERE op_key = @op_key OR (op_key IS NULL AND recipient = @recipient)", false},
		{"binds @op_key, returns op_key", "SELECT op_key, id FROM sent WHERE op_key = @op_key", true},
		{"binds @op_key or admits keyless rows, returns op_key",
			"SELECT id, op_key FROM sent WHERE op_key = @op_key OR (op_key IS NULL AND recipient = @recipient)", true},
		{"the batch form", "SELECT op_key, id FROM sent WHERE op_key = ANY(@op_keys)", true},
		{"returns op_key, binds only @recipient", "SELECT op_key, id FROM sent WHERE recipient = @recipient", false},
		{"by recipient", "SELECT id FROM sent WHERE recipient = @recipient AND created_at BETWEEN @since AND @until", false},
		{"op_key from the parameter", "SELECT id, @op_key AS op_key FROM sent WHERE op_key = @op_key OR recipient = @recipient", false},
		{"in a comment", "SELECT id, op_key FROM sent WHERE recipient = @recipient -- TODO add @op_key", false},
		{"in a block comment", "SELECT id, op_key FROM sent /* @op_key */ WHERE recipient = @recipient", false},
		{"in a string", "SELECT id, op_key FROM sent WHERE recipient = @recipient AND note <> '@op_key'", false},
	} {
		if got := (&Adapter{byKey: byKey(tc.query)}).Matching().ByKey; got != tc.byKey {
			t.Errorf("%s: ByKey = %v, want %v", tc.desc, got, tc.byKey)
		}
	}
}

// TestSelectOpKeyAgreesWithPostgres reads select lists as the adapter
// does and has PostgreSQL describe the same queries: whenever the text is
// read as returning op_key, the database's result has an op_key column
// (so a query read as matching by key has the column each row is compared
// on). Where the text cannot show it (SELECT *), the query is read as not
// returning op_key — resemblance, the stricter rule — though it does.
func TestSelectOpKeyAgreesWithPostgres(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t, dbtest.NewEmptyDatabase(t))
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE sent (id text, op_key text, recipient text, created_at timestamptz, body_hash text, meta jsonb, flag boolean)`); err != nil {
		t.Fatal(err)
	}
	const rest = ` FROM sent s WHERE op_key = @op_key`
	for _, tc := range []struct {
		desc, query string
		want        opKeyOutput
		// hidden: the result has op_key although the text does not show it.
		hidden bool
	}{
		{desc: "the column", query: `SELECT id, op_key` + rest, want: opKeyStored},
		{desc: "the column first", query: `SELECT op_key, id` + rest, want: opKeyStored},
		{desc: "qualified", query: `SELECT s.id, s.op_key` + rest, want: opKeyStored},
		{desc: "upper case", query: `SELECT id, OP_KEY` + rest, want: opKeyStored},
		{desc: "quoted", query: `SELECT id, "op_key"` + rest, want: opKeyStored},
		{desc: "quoted, qualified", query: `SELECT id, s."op_key"` + rest, want: opKeyStored},
		{desc: "cast", query: `SELECT id, op_key::text` + rest, want: opKeyStored},
		{desc: "cast, qualified", query: `SELECT id, s.op_key::varchar(64)` + rest, want: opKeyStored},
		{desc: "cast, then aliased", query: `SELECT id, op_key::text AS k` + rest},
		{desc: "cast, then aliased without AS", query: `SELECT id, s.op_key::varchar(64) k` + rest},
		{desc: "another column as op_key", query: `SELECT id, recipient AS op_key` + rest, want: opKeyStored},
		{desc: "an expression AS op_key", query: `SELECT id, meta->>'op_key' AS op_key` + rest, want: opKeyStored},
		{desc: "an expression aliased without AS", query: `SELECT id, coalesce(op_key, 'x') op_key` + rest, want: opKeyStored},
		{desc: "AS in upper case", query: `SELECT id, meta->>'k' AS OP_KEY` + rest, want: opKeyStored},
		{desc: "DISTINCT ON", query: `SELECT DISTINCT ON (id, op_key) id, op_key` + rest, want: opKeyStored},
		{desc: "after a WITH clause", query: `WITH m AS (SELECT id AS x FROM sent) SELECT id, op_key FROM sent WHERE op_key = @op_key AND id IN (SELECT x FROM m)`, want: opKeyStored},
		{desc: "the first of a UNION", query: `SELECT id, op_key` + rest + ` UNION ALL SELECT id, NULL FROM sent`, want: opKeyStored},
		{desc: "a comment between", query: "SELECT id, -- the key\n op_key /* stored */" + rest, want: opKeyStored},
		{desc: "from the parameter", query: `SELECT id, @op_key AS op_key FROM sent WHERE recipient = @recipient`, want: opKeyFromParameter},
		{desc: "from the parameter, cast", query: `SELECT id, @op_key::text AS op_key` + rest, want: opKeyFromParameter},
		{desc: "coalesced with the parameter", query: `SELECT id, coalesce(op_key, @op_key) AS op_key` + rest, want: opKeyFromParameter},
		{desc: "none", query: `SELECT id, created_at, body_hash AS payload_hash` + rest},
		{desc: "op_key only in WHERE and ORDER BY", query: `SELECT id` + rest + ` ORDER BY op_key`},
		{desc: "op_key only in a subquery", query: `SELECT id FROM (SELECT id, op_key FROM sent) sub WHERE op_key = @op_key`},
		{desc: "op_key only in a WITH clause", query: `WITH m AS (SELECT id, op_key FROM sent) SELECT id FROM m WHERE op_key = @op_key`},
		{desc: "op_key only inside a function", query: `SELECT id, lower(op_key)` + rest},
		{desc: "op_key only inside a window", query: `SELECT id, row_number() OVER (PARTITION BY op_key)` + rest},
		{desc: "a column in a boolean test", query: `SELECT id, flag IS NOT NULL` + rest},
		{desc: "another name quoted", query: `SELECT id, op_key AS "OP_KEY"` + rest},
		{desc: "in a string", query: `SELECT id, 'op_key'` + rest},
		{desc: "an alias in a comment", query: `SELECT id, recipient -- AS op_key` + "\n" + rest},
		{desc: "every column", query: `SELECT *` + rest, hidden: true},
		{desc: "every column, qualified", query: `SELECT s.*` + rest, hidden: true},
		{desc: "in parentheses", query: `(SELECT id, op_key` + rest + `)`, hidden: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := selectOpKey(tc.query); got != tc.want {
				t.Errorf("selectOpKey = %d, want %d", got, tc.want)
			}
			sql, _, err := pgx.NamedArgs{"op_key": "k", "recipient": "r"}.RewriteQuery(ctx, nil, tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			desc, err := conn.Conn().Prepare(ctx, "", sql)
			if err != nil {
				t.Fatalf("PostgreSQL cannot describe %q: %v", tc.query, err)
			}
			has := slices.ContainsFunc(desc.Fields, func(f pgconn.FieldDescription) bool { return f.Name == "op_key" })
			if want := tc.want != opKeyNone || tc.hidden; has != want {
				t.Errorf("PostgreSQL's result has op_key: %v; want %v", has, want)
			}
		})
	}
}
