package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postgres"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// The tests mostly wait on the database: four at a time.
func TestMain(m *testing.M) {
	dbtest.Main(m, dbtest.Parallel(4))
}

const (
	dsnEnv = "MAILER_DB_DSN"
	// recipient and password must never appear in an error or excerpt (I7).
	recipient = "Jane.Doe@example.com"
	password  = "Sup3r-Secret-pw"
)

// t0 is when the fixture's messages were sent.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// query is the operation most tests look up: its window holds t0.
func query(opKey string) providers.Query {
	return providers.Query{
		OpKey:          opKey,
		Recipient:      recipient,
		Action:         "send_email",
		PayloadHash:    strings.Repeat("ab", 32),
		FirstAttemptAt: t0,
		Since:          t0.Add(-2 * time.Hour),
		Until:          t0.Add(30 * time.Minute),
	}
}

// byOpKey is the query of a typical block.
const byOpKey = `
SELECT id, created_at, body_hash AS payload_hash, recipient, fields
FROM sent_emails
WHERE op_key = @op_key AND created_at BETWEEN @since AND @until
ORDER BY id`

// fieldsJSON are the normalized fields of the message msg-f.
const fieldsJSON = `{"to": "jane", "amount": 1299, "subject": "Hi é"}`

// testBundle is a provider database holding sent_emails, and a pool on it
// for the test's own checks.
type testBundle struct {
	dsn  string
	pool *pgxpool.Pool
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dsn := dbtest.NewEmptyDatabase(t)
	pool := dbtest.Pool(t, dsn)
	_, err := pool.Exec(context.Background(), `
CREATE TABLE sent_emails (
	id text, op_key text, recipient text, created_at timestamptz, body_hash text, fields jsonb
);
CREATE SEQUENCE receipts;
CREATE FUNCTION forget_emails() RETURNS void LANGUAGE sql AS 'DELETE FROM sent_emails';
CREATE FUNCTION raise_serialization_failure() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$;
INSERT INTO sent_emails VALUES
	('msg-1',   'op-1',      'Jane.Doe@example.com', '2026-03-02T10:00:00Z', 'hash-1', NULL),
	('msg-2a',  'op-dup',    'jane.doe@example.com', '2026-03-02T09:00:00Z', 'hash-2', NULL),
	('msg-2b',  'op-dup',    'jane.doe@example.com', '2026-03-02T10:05:00Z', 'hash-2', NULL),
	('early',   'op-window', 'jane.doe@example.com', '2026-03-02T07:00:00Z', 'hash-w', NULL),
	('inside',  'op-window', 'jane.doe@example.com', '2026-03-02T09:30:00Z', 'hash-w', NULL),
	('late',    'op-window', 'jane.doe@example.com', '2026-03-02T11:00:00Z', 'hash-w', NULL),
	('msg-f',   'op-fields', 'jane.doe@example.com', '2026-03-02T10:00:00Z', NULL, '`+fieldsJSON+`'),
	('msg-fh',  'op-fields-hashed', 'jane.doe@example.com', '2026-03-02T10:00:00Z', 'stored-hash', '`+fieldsJSON+`'),
	(NULL,      'op-null-id',  'jane.doe@example.com', '2026-03-02T10:00:00Z', 'hash-n', NULL),
	('  ',      'op-empty-id', 'jane.doe@example.com', '2026-03-02T10:00:00Z', 'hash-e', NULL),
	('msg-nf',  'op-bad-fields', 'jane.doe@example.com', '2026-03-02T10:00:00Z', NULL, '[1, 2]'),
	('msg-nt',  'op-no-time', NULL, NULL, 'hash-t', NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	return &testBundle{dsn: dsn, pool: pool}
}

// count returns the rows of sent_emails, read outside the adapter.
func (b *testBundle) count(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM sent_emails").Scan(&n); err != nil {
		t.Fatalf("sent_emails: %v", err)
	}
	return n
}

// newAdapter builds the adapter as cmd/sweeper does: a validated config,
// the DSN read from the environment.
func newAdapter(t *testing.T, dsn, sql string) *postgres.Adapter {
	t.Helper()
	cfg := postgres.NewConfig()
	cfg.DSNEnv, cfg.Query = dsnEnv, sql
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	lookup, err := postgres.Kind.New("mailer_db", cfg, providers.Env{
		Getenv: func(k string) string {
			if k == dsnEnv {
				return dsn
			}
			return ""
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := lookup.(*postgres.Adapter)
	t.Cleanup(a.Close)
	return a
}

// newUnvalidated builds the adapter from a query Validate would refuse, to
// show what the database itself does with it.
func newUnvalidated(t *testing.T, dsn, sql string) *postgres.Adapter {
	t.Helper()
	a, err := postgres.New("mailer_db", &postgres.Config{DSNEnv: dsnEnv, Query: sql, MaxConns: 2}, providertest.Env(nil, dsnEnv, dsn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// lookup runs q with a bound on time and checks that nothing it returns
// shows the recipient or the password.
func lookup(t *testing.T, a *postgres.Adapter, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	records, err := a.Lookup(ctx, q)
	if err != nil {
		checkLeaks(t, "the error", err.Error())
	}
	for _, r := range records {
		checkLeaks(t, "an excerpt", r.Excerpt)
	}
	return records, err
}

func checkLeaks(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(strings.ToLower(text), strings.ToLower(recipient)) {
		t.Errorf("the recipient appears in %s: %q", what, text)
	}
	if strings.Contains(text, password) {
		t.Errorf("the DSN's password appears in %s: %q", what, text)
	}
}

func wantClass(t *testing.T, err error, want providers.Class) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want a %s error", want)
	}
	t.Logf("error: %v", err)
	if class, _ := providers.Classify(err); class != want {
		t.Errorf("classified %s, want %s: %v", class, want, err)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fieldsHash, err := ledger.PayloadHashOf(map[string]any{"to": "jane", "amount": 1299, "subject": "Hi é"})
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]any{"to": "jane", "amount": json.Number("1299"), "subject": "Hi é"}

	for _, tc := range []struct {
		desc  string
		sql   string
		query providers.Query
		want  []providers.Record
	}{
		{
			desc:  "one match",
			query: query("op-1"),
			want: []providers.Record{{
				ID: "msg-1", CreatedAt: t0, Recipient: "Jane.Doe@example.com", PayloadHash: "hash-1",
				Excerpt: "mailer_db row id=msg-1 created_at=2026-03-02T10:00:00Z",
			}},
		},
		{
			desc:  "several matches",
			query: query("op-dup"),
			want: []providers.Record{
				{ID: "msg-2a", CreatedAt: t0.Add(-time.Hour), Recipient: "jane.doe@example.com", PayloadHash: "hash-2"},
				{ID: "msg-2b", CreatedAt: t0.Add(5 * time.Minute), Recipient: "jane.doe@example.com", PayloadHash: "hash-2"},
			},
		},
		{
			desc:  "no match is no records and no error",
			query: query("op-unknown"),
			want:  []providers.Record{},
		},
		{
			desc:  "@since and @until bound the window",
			query: query("op-window"),
			want: []providers.Record{
				{ID: "inside", CreatedAt: t0.Add(-30 * time.Minute), Recipient: "jane.doe@example.com", PayloadHash: "hash-w"},
			},
		},
		{
			desc: "by recipient, case-insensitively, within the window",
			sql: `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails
				WHERE lower(recipient) = lower(@recipient) AND created_at BETWEEN @since AND @until AND op_key LIKE 'op-dup%'
				ORDER BY created_at`,
			query: query("ignored"),
			want: []providers.Record{
				{ID: "msg-2a", CreatedAt: t0.Add(-time.Hour), PayloadHash: "hash-2"},
				{ID: "msg-2b", CreatedAt: t0.Add(5 * time.Minute), PayloadHash: "hash-2"},
			},
		},
		{
			desc:  "fields give the payload hash when payload_hash is NULL",
			query: query("op-fields"),
			want: []providers.Record{
				{ID: "msg-f", CreatedAt: t0, Recipient: "jane.doe@example.com", Fields: fields, PayloadHash: fieldsHash},
			},
		},
		{
			desc:  "a stored payload_hash is kept beside fields",
			query: query("op-fields-hashed"),
			want: []providers.Record{
				{ID: "msg-fh", CreatedAt: t0, Recipient: "jane.doe@example.com", Fields: fields, PayloadHash: "stored-hash"},
			},
		},
		{
			desc: "NULL created_at, recipient and payload_hash are unknown",
			sql: `SELECT id, created_at, body_hash AS payload_hash, recipient FROM sent_emails
				WHERE op_key = @op_key`,
			query: query("op-no-time"),
			want:  []providers.Record{{ID: "msg-nt", PayloadHash: "hash-t", Excerpt: "mailer_db row id=msg-nt"}},
		},
		{
			desc: "a join that repeats a row gives it once",
			sql: `SELECT id, created_at, body_hash AS payload_hash, recipient, fields
				FROM sent_emails, generate_series(1, 3) WHERE op_key = @op_key ORDER BY id`,
			query: query("op-dup"),
			want: []providers.Record{
				{ID: "msg-2a", CreatedAt: t0.Add(-time.Hour), Recipient: "jane.doe@example.com", PayloadHash: "hash-2"},
				{ID: "msg-2b", CreatedAt: t0.Add(5 * time.Minute), Recipient: "jane.doe@example.com", PayloadHash: "hash-2"},
			},
		},
		{
			desc: "every text type is text",
			sql: `SELECT id::varchar AS id, created_at::timestamp AS created_at, body_hash::char(6) AS payload_hash, recipient::name AS recipient
				FROM sent_emails WHERE op_key = @op_key`,
			query: query("op-1"),
			want:  []providers.Record{{ID: "msg-1", CreatedAt: t0, Recipient: "Jane.Doe@example.com", PayloadHash: "hash-1"}},
		},
		{
			desc: "other columns are ignored, and @action and @payload_hash can be used",
			sql: `SELECT id, created_at, body_hash AS payload_hash, op_key, 'x' AS note FROM sent_emails
				WHERE op_key = @op_key AND @action = 'send_email' AND length(@payload_hash) = 64`,
			query: query("op-1"),
			want:  []providers.Record{{ID: "msg-1", CreatedAt: t0, PayloadHash: "hash-1"}},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, b.dsn, cmpOr(tc.sql, byOpKey))
			got, err := lookup(t, a, tc.query)
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			ignoreExcerpt := cmpopts.IgnoreFields(providers.Record{}, "Excerpt")
			if len(tc.want) > 0 && tc.want[0].Excerpt != "" {
				ignoreExcerpt = nil
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), ignoreExcerpt); diff != "" {
				t.Errorf("Lookup (-want +got):\n%s", diff)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestIDOfAnyTypeIsText(t *testing.T) {
	t.Parallel()
	dsn := dbtest.NewEmptyDatabase(t)
	for _, tc := range []struct {
		desc, expr, want string
	}{
		{"integer", "42::bigint", "42"},
		{"smallint", "7::smallint", "7"},
		{"uuid", "'6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b'::uuid", "6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b"},
		{"numeric", "12.50::numeric", "12.50"},
		{"varchar", "'re_1'::varchar(10)", "re_1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, dsn, `SELECT `+tc.expr+` AS id, now() AS created_at, NULL::text AS payload_hash
				WHERE @op_key::text <> ''`)
			got, err := lookup(t, a, query("op-1"))
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if len(got) != 1 || got[0].ID != tc.want {
				t.Errorf("Lookup = %+v, want one record with id %q", got, tc.want)
			}
		})
	}
}

func TestCreatedAtTypes(t *testing.T) {
	t.Parallel()
	dsn := dbtest.NewEmptyDatabase(t)
	for _, tc := range []struct {
		desc, expr string
		want       time.Time
	}{
		{"timestamptz", "'2026-03-02T10:00:00+02:00'::timestamptz", t0.Add(-2 * time.Hour)},
		{"timestamp", "'2026-03-02T10:00:00'::timestamp", t0},
		{"date", "'2026-03-02'::date", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, dsn, `SELECT 'r1' AS id, `+tc.expr+` AS created_at, NULL::text AS payload_hash
				WHERE @op_key::text <> ''`)
			got, err := lookup(t, a, query("op-1"))
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if len(got) != 1 || !got[0].CreatedAt.Equal(tc.want) {
				t.Errorf("Lookup = %+v, want one record created at %s", got, tc.want)
			}
		})
	}
}

// TestPasswordNeverInErrors puts the DSN's password where the database
// quotes it back: the adapter's errors must not carry it even then. (The
// test server trusts local connections, so the password is not checked.)
func TestPasswordNeverInErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var user string
	if err := b.pool.QueryRow(context.Background(), "SELECT current_user").Scan(&user); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	a := newAdapter(t, u.String(), `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails
		WHERE op_key = @op_key AND length(id) = '`+password+`'::int`)
	_, err = lookup(t, a, query("op-1")) // checks the error for the password
	wantClass(t, err, providers.ClassPermanent)
}

func TestParametersAreBoundNotInterpolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.count(t)
	a := newAdapter(t, b.dsn, byOpKey)
	for _, opKey := range []string{
		`'; DROP TABLE sent_emails; --`,
		`op-1' OR '1'='1`,
		`op-1'); DELETE FROM sent_emails; --`,
	} {
		got, err := lookup(t, a, query(opKey))
		if err != nil || len(got) != 0 {
			t.Errorf("Lookup(%q) = %v, %v; want no records and no error", opKey, got, err)
		}
	}
	if n := b.count(t); n != before {
		t.Errorf("sent_emails has %d rows after the lookups, want %d", n, before)
	}
}

func TestQueryThatWritesIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.count(t)
	const cols = "id, created_at, body_hash AS payload_hash"
	for _, tc := range []struct {
		desc string
		sql  string
		// dsnQuery is added to the DSN.
		dsnQuery string
	}{
		{desc: "DELETE in a CTE", sql: `WITH d AS (DELETE FROM sent_emails RETURNING *) SELECT ` + cols + ` FROM d WHERE op_key = @op_key`},
		{desc: "INSERT in a CTE", sql: `WITH i AS (INSERT INTO sent_emails (id, op_key) VALUES ('forged', @op_key) RETURNING *) SELECT ` + cols + ` FROM i`},
		{desc: "UPDATE in a CTE", sql: `WITH u AS (UPDATE sent_emails SET body_hash = 'forged' WHERE op_key = @op_key RETURNING *) SELECT ` + cols + ` FROM u`},
		{desc: "SELECT FOR UPDATE", sql: `SELECT ` + cols + ` FROM sent_emails WHERE op_key = @op_key FOR UPDATE`},
		{desc: "SELECT INTO a new table", sql: `SELECT * INTO stolen FROM sent_emails WHERE op_key = @op_key`},
		{desc: "nextval", sql: `SELECT nextval('receipts')::text AS id, now() AS created_at, NULL::text AS payload_hash WHERE @op_key::text <> ''`},
		{desc: "a function that deletes", sql: `SELECT ` + cols + ` FROM sent_emails, forget_emails() WHERE op_key = @op_key`},
		{desc: "leaving read-only mode", sql: `SELECT set_config('transaction_read_only', 'off', true) AS id, now() AS created_at, NULL::text AS payload_hash FROM sent_emails WHERE op_key = @op_key`},
		{desc: "a second statement (refused by Validate too)", sql: `SELECT ` + cols + ` FROM sent_emails WHERE op_key = @op_key; DELETE FROM sent_emails`},
		{desc: "a second statement over a simple-protocol DSN", sql: `SELECT ` + cols + ` FROM sent_emails WHERE op_key = @op_key; DELETE FROM sent_emails`, dsnQuery: "default_query_exec_mode=simple_protocol"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			dsn := b.dsn
			if tc.dsnQuery != "" {
				u, err := url.Parse(dsn)
				if err != nil {
					t.Fatal(err)
				}
				u.RawQuery = strings.TrimPrefix(u.RawQuery+"&"+tc.dsnQuery, "&")
				dsn = u.String()
			}
			a := newUnvalidated(t, dsn, tc.sql)
			got, err := lookup(t, a, query("op-1"))
			if err == nil {
				t.Fatalf("Lookup = %v, nil; want the database to refuse the query", got)
			}
			wantClass(t, err, providers.ClassPermanent)
		})
	}
	t.Cleanup(func() {
		// After every subtest: nothing changed.
		if n := b.count(t); n != before {
			t.Errorf("sent_emails has %d rows, want %d", n, before)
		}
		var changed, stolen bool
		ctx := context.Background()
		if err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sent_emails WHERE id = 'forged' OR body_hash = 'forged')`).Scan(&changed); err != nil || changed {
			t.Errorf("sent_emails was changed (%v)", err)
		}
		if err := b.pool.QueryRow(ctx, `SELECT to_regclass('stolen') IS NOT NULL`).Scan(&stolen); err != nil || stolen {
			t.Errorf("SELECT INTO created a table (%v)", err)
		}
		var called bool
		if err := b.pool.QueryRow(ctx, `SELECT is_called FROM receipts`).Scan(&called); err != nil || called {
			t.Errorf("the sequence advanced (%v)", err)
		}
	})
}

func TestResultContract(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		desc     string
		sql      string
		opKey    string
		want     providers.Class
		wantText string
	}{
		{desc: "no id column", sql: `SELECT op_key, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "no id column"},
		{desc: "no created_at column", sql: `SELECT id, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "no created_at column"},
		{desc: "no payload_hash column", sql: `SELECT id, created_at FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "no payload_hash column"},
		{desc: "a missing column fails even with no rows", sql: `SELECT op_key, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-unknown", want: providers.ClassPermanent, wantText: "no id column"},
		{desc: "two id columns", sql: `SELECT id, op_key AS id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "two columns named id"},
		{desc: "NULL id", sql: byOpKey, opKey: "op-null-id", want: providers.ClassTransient, wantText: "NULL or empty id"},
		{desc: "blank id", sql: byOpKey, opKey: "op-empty-id", want: providers.ClassTransient, wantText: "NULL or empty id"},
		{desc: "fields not an object", sql: byOpKey, opKey: "op-bad-fields", want: providers.ClassPermanent, wantText: "fields is not a JSON object"},
		{desc: "created_at of the wrong type", sql: `SELECT id, 'yesterday'::text AS created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column created_at is text; want timestamptz, timestamp or date"},
		// A column of the wrong type is a query to fix, not a mismatch.
		{desc: "payload_hash an integer", sql: `SELECT id, created_at, 42 AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column payload_hash is int4; want text"},
		{desc: "payload_hash bytes", sql: `SELECT id, created_at, sha256(body_hash::bytea) AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column payload_hash is bytea; want text"},
		{desc: "a wrongly typed column fails even with no rows", sql: `SELECT id, created_at, 42 AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-unknown", want: providers.ClassPermanent, wantText: "column payload_hash is int4"},
		{desc: "a boolean id", sql: `SELECT true AS id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column id is bool; want text"},
		{desc: "a floating-point id", sql: `SELECT 1.5::float8 AS id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column id is float8"},
		{desc: "a JSON id", sql: `SELECT to_jsonb(id) AS id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column id is jsonb"},
		{desc: "a numeric recipient", sql: `SELECT id, created_at, body_hash AS payload_hash, 15550100777 AS recipient FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column recipient is int8; want text"},
		{desc: "fields an integer", sql: `SELECT id, created_at, body_hash AS payload_hash, 7 AS fields FROM sent_emails WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "column fields is int4; want jsonb, json or text"},
		// The same id twice: one record when the rows agree, else no answer.
		{desc: "one id with two payload hashes", sql: `SELECT 'r1' AS id, now() AS created_at, h AS payload_hash FROM (VALUES ('a'), ('b')) v(h) WHERE @op_key::text <> ''`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: `rows 0 and 1 have the same id "r1" but different payload_hash`},
		{desc: "one id with two recipients", sql: `SELECT id, created_at, body_hash AS payload_hash, r AS recipient FROM sent_emails, (VALUES ('a'), ('b')) v(r) WHERE op_key = @op_key`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: `rows 0 and 1 have the same id "msg-1" but different recipient`},
		{desc: "one id with two creation times", sql: `SELECT 'r1' AS id, t AS created_at, 'h' AS payload_hash FROM (VALUES (now()), (now() - interval '1 second')) v(t) WHERE @op_key::text <> ''`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "different created_at"},
		{desc: "one id with two sets of fields", sql: `SELECT 'r1' AS id, now() AS created_at, NULL::text AS payload_hash, f::jsonb AS fields FROM (VALUES ('{"a":1}'), ('{"a":2}')) v(f) WHERE @op_key::text <> ''`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "different fields"},
		// fields read strictly: json and text keep duplicate keys.
		{desc: "fields with a key twice", sql: `SELECT 'r1' AS id, now() AS created_at, NULL::text AS payload_hash, '{"amount":1,"amount":1299}'::json AS fields WHERE @op_key::text <> ''`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: `duplicate key "amount"`},
		{desc: "fields with a key in two cases", sql: `SELECT 'r1' AS id, now() AS created_at, NULL::text AS payload_hash, '{"amount":1,"Amount":1299}'::jsonb AS fields WHERE @op_key::text <> ''`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "differ only in letter case"},
		{desc: "fields with data after the object", sql: `SELECT 'r1' AS id, now() AS created_at, NULL::text AS payload_hash, '{"amount":1} {}'::text AS fields WHERE @op_key::text <> ''`,
			opKey: "op-1", want: providers.ClassPermanent, wantText: "fields is not a JSON object"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, b.dsn, tc.sql)
			got, err := lookup(t, a, query(tc.opKey))
			if err == nil {
				t.Fatalf("Lookup = %+v, nil; want an error", got)
			}
			wantClass(t, err, tc.want)
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not say %q", err, tc.wantText)
			}
		})
	}
}

func TestQueryErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		desc     string
		sql      string
		want     providers.Class
		wantCode string
	}{
		{desc: "syntax error", sql: `SELECT id, FROM sent_emails WHERE op_key = @op_key`, want: providers.ClassPermanent, wantCode: "42601"},
		{desc: "undefined column", sql: `SELECT id, created_at, payload_hash FROM sent_emails WHERE op_key = @op_key`, want: providers.ClassPermanent, wantCode: "42703"},
		{desc: "undefined table", sql: `SELECT id, created_at, body_hash AS payload_hash FROM sent_mail WHERE op_key = @op_key`, want: providers.ClassPermanent, wantCode: "42P01"},
		{desc: "a cast of the recipient that fails does not show it",
			sql:  `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key AND length(id) = (@recipient::text)::int`,
			want: providers.ClassPermanent, wantCode: "22P02"},
		{desc: "a parameter of the wrong type does not show the recipient",
			sql:  `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key AND length(id) = @recipient::int`,
			want: providers.ClassPermanent, wantCode: "22P02"},
		{desc: "a serialization failure is transient",
			sql: `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key
				AND CASE WHEN id = 'msg-1' THEN raise_serialization_failure() ELSE true END`,
			want: providers.ClassTransient, wantCode: "40001"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, b.dsn, tc.sql)
			got, err := lookup(t, a, query("op-1"))
			if err == nil {
				t.Fatalf("Lookup = %+v, nil; want an error", got)
			}
			wantClass(t, err, tc.want)
			if !strings.Contains(err.Error(), "SQLSTATE "+tc.wantCode) {
				t.Errorf("error %q does not carry SQLSTATE %s", err, tc.wantCode)
			}
		})
	}
}

func TestPermissionDeniedIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	role := "sweeper_noaccess_" + strings.ToLower(rand.Text()[:12])
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() {
		if _, err := b.pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("drop role: %v", err)
		}
	})
	u, err := url.Parse(b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	a := newAdapter(t, u.String(), byOpKey)
	_, err = lookup(t, a, query("op-1"))
	wantClass(t, err, providers.ClassPermanent)
	if err != nil && !strings.Contains(err.Error(), "SQLSTATE 42501") {
		t.Errorf("error %q is not permission denied", err)
	}
}

func TestUnreachableDatabaseIsTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ desc, dsn string }{
		{"URL", "postgres://sweeper:" + password + "@127.0.0.1:1/provider?connect_timeout=5&sslmode=disable"},
		{"key=value", "host=127.0.0.1 port=1 user=sweeper password=" + password + " dbname=provider connect_timeout=5 sslmode=disable"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, tc.dsn, byOpKey)
			start := time.Now()
			got, err := lookup(t, a, query("op-1"))
			if err == nil {
				t.Fatalf("Lookup = %v, nil; want an error", got)
			}
			wantClass(t, err, providers.ClassTransient)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Lookup took %s", d)
			}
		})
	}
}

func TestMissingDatabaseIsPermanent(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/sweeper_no_such_database"
	a := newAdapter(t, u.String(), byOpKey)
	_, err = lookup(t, a, query("op-1"))
	wantClass(t, err, providers.ClassPermanent)
}

// sleepingQuery is a lookup that runs until the test ends it.
const sleepingQuery = `SELECT id, created_at, body_hash AS payload_hash
		FROM sent_emails, pg_sleep(30) WHERE op_key = @op_key`

// sleeping reports whether sleepingQuery runs on b's database.
func sleeping(t *testing.T, b *testBundle) bool {
	t.Helper()
	var running int
	err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'active' AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()`).Scan(&running)
	if err != nil {
		t.Fatal(err)
	}
	return running > 0
}

// lookupWhileSleeping runs sleepingQuery's lookup under end(t, signal)
// — testwait.DeadlineWhen or testwait.CancelWhen — and closes signal once
// the statement runs on the server: the lookup's context ends while the
// query runs, never before it was sent. It returns how long the lookup
// took to return after that, and its answer.
func lookupWhileSleeping(t *testing.T, b *testBundle, end func(testing.TB, <-chan struct{}) context.Context) (time.Duration, []providers.Record, error) {
	t.Helper()
	a := newAdapter(t, b.dsn, sleepingQuery)
	signal := make(chan struct{})
	type answer struct {
		records []providers.Record
		err     error
	}
	answered := make(chan answer, 1)
	lookupCtx := end(t, signal)
	go func() {
		records, err := a.Lookup(lookupCtx, query("op-1"))
		answered <- answer{records, err}
	}()
	testwait.Until(t, 20*time.Second, "the lookup's statement running on the server", func() bool { return sleeping(t, b) })
	close(signal)
	start := time.Now()
	got := <-answered
	return time.Since(start), got.records, got.err
}

func TestDeadlineIsTransientAndStopsTheQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	after, got, err := lookupWhileSleeping(t, b, testwait.DeadlineWhen)
	if err == nil {
		t.Fatalf("Lookup past its deadline = %v, nil; want an error", got)
	}
	if after > 2*time.Second {
		t.Errorf("Lookup returned %s after its deadline passed", after)
	}
	wantClass(t, err, providers.ClassTransient)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
	checkLeaks(t, "the error", err.Error())

	// The statement was cancelled on the server, not left running.
	testwait.Until(t, 5*time.Second, "the statement stopped on the server after the deadline", func() bool { return !sleeping(t, b) })
}

func TestCancellationReturnsPromptly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	after, got, err := lookupWhileSleeping(t, b, testwait.CancelWhen)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Lookup after cancellation = %v, %v; want context.Canceled", got, err)
	}
	if after > 2*time.Second {
		t.Errorf("Lookup returned %s after it was cancelled", after)
	}
	// The adapter still works: the pool dropped or reused the connection.
	if _, err := lookup(t, newAdapter(t, b.dsn, byOpKey), query("op-1")); err != nil {
		t.Errorf("Lookup after a cancelled one: %v", err)
	}
}

func TestRowCap(t *testing.T) {
	t.Parallel()
	dsn := dbtest.NewEmptyDatabase(t)
	rows := func(n string) string {
		// generate_series in the select list streams its rows; in FROM it
		// would build them all before the first.
		return `SELECT g::text AS id, now() AS created_at, NULL::text AS payload_hash
			FROM (SELECT generate_series(1, ` + n + `) AS g) s WHERE @op_key::text <> ''`
	}
	t.Run("at the cap", func(t *testing.T) {
		t.Parallel()
		got, err := lookup(t, newAdapter(t, dsn, rows("100")), query("op-1"))
		if err != nil || len(got) != postgres.MaxRows {
			t.Errorf("Lookup = %d records, %v; want %d and no error", len(got), err, postgres.MaxRows)
		}
	})
	t.Run("past the cap", func(t *testing.T) {
		t.Parallel()
		_, err := lookup(t, newAdapter(t, dsn, rows("101")), query("op-1"))
		wantClass(t, err, providers.ClassPermanent)
	})
	t.Run("far past the cap stops the query", func(t *testing.T) {
		t.Parallel()
		a := newAdapter(t, dsn, rows("1000000000"))
		start := time.Now()
		_, err := lookup(t, a, query("op-1"))
		wantClass(t, err, providers.ClassPermanent)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Lookup took %s: the rest of the result was read", d)
		}
	})
}

func TestDSNFromFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte(b.dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := postgres.NewConfig()
	cfg.DSNEnv, cfg.Query = dsnEnv, byOpKey
	l, err := postgres.Kind.New("mailer_db", cfg, providers.Env{Getenv: func(k string) string {
		if k == dsnEnv+"_FILE" {
			return file
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := l.(*postgres.Adapter)
	t.Cleanup(a.Close)
	if got, err := lookup(t, a, query("op-1")); err != nil || len(got) != 1 {
		t.Errorf("Lookup = %v, %v; want one record", got, err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	cfg := postgres.NewConfig()
	cfg.DSNEnv, cfg.Query = dsnEnv, byOpKey
	for _, tc := range []struct {
		desc     string
		env      map[string]string
		wantText string
	}{
		{"variable not set", map[string]string{}, "dsn_env: environment variable " + dsnEnv + " is not set"},
		{"file not found", map[string]string{dsnEnv + "_FILE": "/nonexistent/dsn"}, "dsn_env: " + dsnEnv + "_FILE: open /nonexistent/dsn"},
		{"not a connection string", map[string]string{dsnEnv: "postgres://sweeper:" + password + "@127.0.0.1:notaport/db"}, "dsn_env: the variable does not hold a valid PostgreSQL connection string"},
		{"not a connection string (key=value)", map[string]string{dsnEnv: "host=127.0.0.1 password='" + password + " port=x"}, "dsn_env: the variable does not hold a valid PostgreSQL connection string"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			l, err := postgres.Kind.New("mailer_db", cfg, providers.Env{Getenv: func(k string) string { return tc.env[k] }})
			if err == nil {
				l.(*postgres.Adapter).Close()
				t.Fatal("Kind.New succeeded; want an error")
			}
			checkLeaks(t, "the error", err.Error())
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not say %q", err, tc.wantText)
			}
		})
	}
}

// orKeyless is the query of a block that looks operations up by op_key and
// also takes keyless rows to the same recipient: its text binds @op_key,
// but its rows cannot show whose they are.
const orKeyless = `
SELECT id, created_at, body_hash AS payload_hash, recipient
FROM sent_emails
WHERE op_key = @op_key OR (op_key IS NULL AND recipient = @recipient)`

// keyedSetup is setup with a keyless message to the same recipient, sent
// an hour before now by another path.
func keyedSetup(t *testing.T) (*testBundle, time.Time) {
	t.Helper()
	b := setup(t)
	sentAt := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO sent_emails VALUES ('keyless', NULL, $1, $2, 'hash-k', NULL)`, recipient, sentAt); err != nil {
		t.Fatal(err)
	}
	return b, sentAt
}

// TestQueryWithoutOpKeyMatchesByResemblance: a query that binds @op_key
// but returns no op_key column matches by resemblance, whatever its WHERE
// clause: the keyless row it returns is judged as any look-alike is, in
// the operation's own window, not from its first attempt until now.
func TestQueryWithoutOpKeyMatchesByResemblance(t *testing.T) {
	t.Parallel()
	b, sentAt := keyedSetup(t)
	a := newAdapter(t, b.dsn, orKeyless)
	if a.Matching().ByKey {
		t.Fatal("Matching().ByKey = true for a query that returns no op_key; want resemblance")
	}
	p := providers.NewProvider("mailer_db", "postgres", a, providers.Limits{LookupTimeout: 20 * time.Second, RateLimit: 1000, Concurrency: 1})
	if p.Matching().ByKey || p.MaxBatch() != 1 {
		t.Errorf("provider: ByKey %v, MaxBatch %d; want resemblance, one operation per statement", p.Matching().ByKey, p.MaxBatch())
	}
	// The operation was first attempted three days ago; its own window
	// ends a margin after that, long before the keyless message was sent.
	firstAttempt := time.Now().Add(-72 * time.Hour)
	q := query("op-3-days")
	q.FirstAttemptAt, q.Since, q.Until = firstAttempt, firstAttempt.Add(-2*time.Minute), firstAttempt.Add(p.Matching().Margin)
	got, err := lookup(t, a, q)
	if err != nil {
		t.Fatal(err)
	}
	// The adapter returns the row as the query does; its date, outside the
	// window, is what keeps it from proving anything.
	if len(got) != 1 || got[0].ID != "keyless" || !got[0].CreatedAt.Equal(sentAt) {
		t.Fatalf("Lookup = %+v; want the keyless row", got)
	}
	if !got[0].CreatedAt.After(q.Until) {
		t.Errorf("the keyless row, sent at %s, lies in the window ending %s", got[0].CreatedAt, q.Until)
	}
}

// TestQueryReturningOpKeyComparesEachRow: a query that returns op_key
// matches by key, and each row's op_key must be the operation's, exactly:
// a keyless row (NULL), another operation's row or a key in another letter
// case is a malformed answer, never a record — in the single form and in
// the batch form.
func TestQueryReturningOpKeyComparesEachRow(t *testing.T) {
	t.Parallel()
	b, _ := keyedSetup(t)
	for _, tc := range []struct {
		desc, sql string
		key       string
		wantIDs   []string // nil: a malformed answer
	}{
		{desc: "its own rows", sql: byOpKeyReturningKey, key: "op-dup", wantIDs: []string{"msg-2a", "msg-2b"}},
		{desc: "none", sql: byOpKeyReturningKey, key: "op-none", wantIDs: []string{}},
		{desc: "a keyless row", key: "op-1",
			sql: `SELECT id, op_key, created_at, body_hash AS payload_hash, recipient FROM sent_emails WHERE op_key = @op_key OR (op_key IS NULL AND recipient = @recipient)`},
		{desc: "a keyless row alone", key: "op-none",
			sql: `SELECT id, op_key, created_at, body_hash AS payload_hash, recipient FROM sent_emails WHERE op_key = @op_key OR (op_key IS NULL AND recipient = @recipient)`},
		{desc: "another operation's row", key: "op-1",
			sql: `SELECT s.op_key, id, created_at, body_hash AS payload_hash FROM sent_emails s WHERE op_key = @op_key OR op_key = 'op-window'`},
		{desc: "the key in another letter case", key: "op-1",
			sql: `SELECT upper(op_key) AS op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, b.dsn, tc.sql)
			if !a.Matching().ByKey {
				t.Fatal("Matching().ByKey = false for a query that returns op_key and binds @op_key")
			}
			got, err := lookup(t, a, query(tc.key))
			if tc.wantIDs == nil {
				if got != nil {
					t.Errorf("records %v alongside the error", got)
				}
				wantClass(t, err, providers.ClassTransient)
				if !errors.Is(err, providers.ErrMalformed) {
					t.Errorf("err = %v; want a malformed answer", err)
				}
				return
			}
			if err != nil || !slices.Equal(ids(got), tc.wantIDs) {
				t.Errorf("Lookup = %v, %v; want %v", ids(got), err, tc.wantIDs)
			}
		})
	}
	// The batch form: a row is attributed by its op_key, exactly; a
	// keyless one goes to nobody and fails the statement.
	for _, tc := range []struct {
		desc, sql string
		wantErr   bool
	}{
		{desc: "batch: rows by their op_key", sql: byOpKeys},
		{desc: "batch: a keyless row", wantErr: true,
			sql: `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys) OR op_key IS NULL`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newAdapter(t, b.dsn, tc.sql)
			if !a.Matching().ByKey || a.MaxBatch() < 2 {
				t.Fatalf("ByKey %v, MaxBatch %d; want by key, in batches", a.Matching().ByKey, a.MaxBatch())
			}
			answers, err := a.LookupBatch(t.Context(), []providers.Query{query("op-1"), query("OP-1"), query("op-dup")})
			if tc.wantErr {
				if err == nil || !errors.Is(err, providers.ErrMalformed) {
					t.Fatalf("LookupBatch = %+v, %v; want a malformed answer", answers, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range [][]string{{"msg-1"}, {}, {"msg-2a", "msg-2b"}} {
				if answers[i].Err != nil || !slices.Equal(ids(answers[i].Records), want) {
					t.Errorf("answer %d = %v, %v; want %v", i, ids(answers[i].Records), answers[i].Err, want)
				}
			}
		})
	}
}

// byOpKeyReturningKey is byOpKey returning op_key: it matches by key.
const byOpKeyReturningKey = `
SELECT op_key, id, created_at, body_hash AS payload_hash, recipient, fields
FROM sent_emails
WHERE op_key = @op_key AND created_at BETWEEN @since AND @until
ORDER BY id`

// TestStateColumn: a query may return state (effect, in_flight, failed;
// NULL is the effect) and status, the provider's own word; any other state
// is a malformed answer — for its operation only, in the batch form.
func TestStateColumn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const states = `CASE id WHEN 'msg-2a' THEN 'in_flight' WHEN 'msg-2b' THEN 'failed' WHEN 'msg-1' THEN 'effect' END`
	single := `SELECT id, created_at, body_hash AS payload_hash, ` + states + ` AS state, 'status of ' || id AS status
		FROM sent_emails WHERE op_key = @op_key ORDER BY id`
	for _, tc := range []struct {
		key  string
		want []providers.Record
	}{
		{"op-1", []providers.Record{{ID: "msg-1", State: providers.StateEffect, Status: "status of msg-1"}}},
		{"op-dup", []providers.Record{{ID: "msg-2a", State: providers.StateInFlight, Status: "status of msg-2a"}, {ID: "msg-2b", State: providers.StateFailed, Status: "status of msg-2b"}}},
		{"op-fields", []providers.Record{{ID: "msg-f", Status: "status of msg-f"}}}, // NULL: the effect
	} {
		got, err := lookup(t, newAdapter(t, b.dsn, single), query(tc.key))
		if err != nil {
			t.Fatalf("%s: %v", tc.key, err)
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(providers.Record{}, "CreatedAt", "PayloadHash", "Recipient", "Excerpt", "Fields")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.key, diff)
		}
	}

	for _, bad := range []string{"reversed", "sent", "EFFECT", ""} {
		a := newAdapter(t, b.dsn, `SELECT id, created_at, body_hash AS payload_hash, '`+bad+`' AS state FROM sent_emails WHERE op_key = @op_key`)
		got, err := lookup(t, a, query("op-1"))
		if got != nil || !errors.Is(err, providers.ErrMalformed) {
			t.Errorf("state %q: Lookup = %v, %v; want a malformed answer", bad, got, err)
		}
	}
	long := newAdapter(t, b.dsn, `SELECT id, created_at, body_hash AS payload_hash, repeat('x', 300) AS status FROM sent_emails WHERE op_key = @op_key`)
	if got, err := lookup(t, long, query("op-1")); err != nil || len(got) != 1 || got[0].Status != strings.Repeat("x", 200)+"…" {
		t.Errorf("a long status: %v, %v; want it cut short", got, err)
	}
	wrongType := newAdapter(t, b.dsn, `SELECT id, created_at, body_hash AS payload_hash, 1 AS state FROM sent_emails WHERE op_key = @op_key`)
	if _, err := lookup(t, wrongType, query("op-1")); err == nil || !strings.Contains(err.Error(), "column state is int4") {
		t.Errorf("an integer state: %v; want a permanent error naming the column", err)
	}

	batch := newAdapter(t, b.dsn, `SELECT op_key, id, created_at, body_hash AS payload_hash,
		CASE id WHEN 'msg-2a' THEN 'in_flight' WHEN 'msg-1' THEN 'sent' END AS state, NULL AS status
		FROM sent_emails WHERE op_key = ANY(@op_keys) ORDER BY id`)
	answers, err := batch.LookupBatch(t.Context(), []providers.Query{query("op-1"), query("op-dup")})
	if err != nil {
		t.Fatal(err)
	}
	if answers[0].Err == nil || !errors.Is(answers[0].Err, providers.ErrMalformed) {
		t.Errorf("op-1 (state sent): %+v; want a malformed answer", answers[0])
	}
	if answers[1].Err != nil || len(answers[1].Records) != 2 || answers[1].Records[0].State != providers.StateInFlight || answers[1].Records[1].State != "" {
		t.Errorf("op-dup: %+v; want in_flight and the effect", answers[1])
	}
}

// TestDataInErrorsIsNotKept: the database's message for a data exception
// quotes the value it could not take — a row's text, a code — and the
// error keeps that message only as a length and a digest, with its
// SQLSTATE and the adapter's words; a message about the statement itself
// (an undefined column) stays readable.
func TestDataInErrorsIsNotKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAdapter(t, b.dsn, `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails
		WHERE op_key = @op_key AND length(id) = ('G-482913 https://acme.example/l/9fQ2xZ7kLmN0pR')::int`)
	_, err := lookup(t, a, query("op-1"))
	if err == nil {
		t.Fatal("Lookup = nil error; want the cast's")
	}
	for _, secret := range []string{"G-482913", "acme.example", "9fQ2xZ7kLmN0pR"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q quotes the database's text %q", err, secret)
		}
	}
	if !strings.Contains(err.Error(), "query: ERROR (SQLSTATE 22P02): [provider text: ") {
		t.Errorf("error %q; want the SQLSTATE and the message as provider text", err)
	}
	var said *providers.ProviderText
	if !errors.As(err, &said) || !strings.Contains(said.Text(), "G-482913") {
		t.Errorf("error %v does not carry the database's message apart", err)
	}

	a = newAdapter(t, b.dsn, `SELECT id, created_at, payload_hash FROM sent_emails WHERE op_key = @op_key`)
	if _, err := lookup(t, a, query("op-1")); err == nil || !strings.Contains(err.Error(), `column "payload_hash" does not exist`) {
		t.Errorf("undefined column: %v; want the database's words about the statement", err)
	}
}
