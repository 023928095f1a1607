package ledger_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// inspect maps m and inspects its table in pool.
func inspect(t *testing.T, pool *pgxpool.Pool, m ledger.Mapping) ledger.Inspection {
	t.Helper()
	tbl, err := ledger.Map(m)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ledger.Inspect(context.Background(), pool, tbl)
	if err != nil {
		t.Fatalf("inspect %s: %v", m.Table, err)
	}
	return in
}

func hasRefusal(in ledger.Inspection, parts ...string) bool {
	return slices.ContainsFunc(in.Refusals, func(r string) bool {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				return false
			}
		}
		return true
	})
}

func column(in ledger.Inspection, key string) ledger.ColumnCheck {
	for _, c := range in.Columns {
		if c.Key == key {
			return c
		}
	}
	return ledger.ColumnCheck{}
}

// TestInspectAdoptedTable: the test kit's adopted table, quoted names
// (a space, mixed case, a reserved word) and all, is usable, with every
// read served by one of its indexes and the absent columns' costs said.
func TestInspectAdoptedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, tbl := adopted(t)
	in, err := ledger.Inspect(ctx, pool, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Usable || !in.Exists || in.Kind != "table" || len(in.Refusals) > 0 {
		t.Fatalf("not usable: %+v", in)
	}
	for _, c := range in.Columns {
		if !c.Found || !c.TypeOK {
			t.Errorf("column %s (%s): %+v", c.Key, c.Column, c)
		}
	}
	if c := column(in, "op_key"); c.Column != "IdemKey" || c.Type != "character varying(255)" {
		t.Errorf("op_key: %+v", c)
	}
	wantServed := map[string]string{"stale scan": "outbound_log_pending", "record holders": "outbound_log_record",
		"look-alikes": "outbound_log_lookalike", "review queue": "outbound_log_review", "settled count": "outbound_log_settled"}
	if len(in.Indexes) != len(wantServed) {
		t.Fatalf("indexes: %+v", in.Indexes)
	}
	for _, ix := range in.Indexes {
		if !slices.Contains(ix.By, wantServed[ix.Purpose]) || ix.Create != "" {
			t.Errorf("%s: served by %v, want %s (create %q)", ix.Purpose, ix.By, wantServed[ix.Purpose], ix.Create)
		}
	}
	if in.Keys[0].By != "Outbound Log_pkey" || in.Keys[1].By != "Outbound Log_IdemKey_key" {
		t.Errorf("keys: %+v", in.Keys)
	}
	// No unique (record, provider) index: said, with the statement.
	if in.Keys[2].By != "" || !strings.Contains(in.Keys[2].Create, `CREATE UNIQUE INDEX CONCURRENTLY "Outbound Log_sweeper_provider_record_id_key" ON "public"."Outbound Log" ("provider_ref", "channel") WHERE "provider_ref" IS NOT NULL`) {
		t.Errorf("record key: %+v", in.Keys[2])
	}
	var absent []string
	for _, a := range in.Absent {
		absent = append(absent, a.Key)
		if a.Cost != ledger.Absence[a.Key] || a.Cost == "" {
			t.Errorf("absent %s costs %q", a.Key, a.Cost)
		}
	}
	if !slices.Equal(absent, []string{"workflow", "source_id", "payload", "created_at", "updated_at"}) {
		t.Errorf("absent: %v", absent)
	}
	if len(in.UnnamedWords) != 0 || in.WordsFrom != "data" || in.GuardsInstalled() {
		t.Errorf("words %v from %s, guards %+v", in.UnnamedWords, in.WordsFrom, in.Guards)
	}

	// A word the workflows write that the mapping does not name.
	store := tbl.Store(pool)
	if _, err := store.Claim(ctx, ledger.Attempt{OpKey: "k1", Workflow: "w", Provider: "sms", Action: "send", PayloadHash: strings.Repeat("a", 64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE public."Outbound Log" SET "order" = 'bounced'`); err != nil {
		t.Fatal(err)
	}
	in, err = ledger.Inspect(ctx, pool, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in.UnnamedWords, []string{"bounced"}) || !in.Usable ||
		!slices.ContainsFunc(in.Warnings, func(w string) bool { return strings.Contains(w, `"bounced"`) }) {
		t.Errorf("unnamed words %v, warnings %q", in.UnnamedWords, in.Warnings)
	}
}

// outboundMapping adopts public.outbound_log, the table of
// outboundLogDDL.
var outboundMapping = ledger.Mapping{
	Table: "public.outbound_log",
	Columns: map[string]string{
		"op_key": "idem_key", "provider": "channel", "action": "kind", "recipient": "to_addr",
		"payload_hash": "body_sha256", "status": "state", "attempts": "tries", "first_attempt_at": "first_try",
		"last_attempt_at": "last_try", "provider_record_id": "provider_ref",
		"workflow": "", "source_id": "", "payload": "", "created_at": "", "updated_at": "",
	},
	Statuses: map[ledger.Status]string{"pending": "queued", "done": "sent", "review": "check", "failed": ""},
}

// outboundLogDDL is a workflow's log with a plain key and no index: the
// op_key has no unique index.
const outboundLogDDL = `CREATE TABLE public.outbound_log (
	id bigserial PRIMARY KEY, idem_key text NOT NULL, channel text NOT NULL, kind text NOT NULL, to_addr text,
	body_sha256 text NOT NULL, state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'check')),
	tries integer NOT NULL DEFAULT 1, first_try timestamptz NOT NULL DEFAULT now(), last_try timestamptz, provider_ref text)`

// TestInspectRefusesTables: what sweeper cannot run on is refused, each
// problem named by the column or key at fault.
func TestInspectRefusesTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(outboundLogDDL)

	// No unique index on the op_key: refused, with the statement to add.
	in := inspect(t, pool, outboundMapping)
	want := `CREATE UNIQUE INDEX CONCURRENTLY "outbound_log_sweeper_op_key_key" ON "public"."outbound_log" ("idem_key");`
	if in.Usable || !hasRefusal(in, `column idem_key (ledger.columns.op_key) has no unique index`, "ON CONFLICT", want) {
		t.Fatalf("refusals %q", in.Refusals)
	}
	// The statement given is one PostgreSQL runs, and then the table is
	// usable.
	exec(strings.TrimSuffix(in.Keys[1].Create, ";"))
	if in = inspect(t, pool, outboundMapping); !in.Usable {
		t.Fatalf("after %s: %q", want, in.Refusals)
	}

	// A required column missing, named; an optional one missing, with how
	// to say it is absent.
	m := outboundMapping
	m.Columns = map[string]string{}
	for k, v := range outboundMapping.Columns {
		m.Columns[k] = v
	}
	m.Columns["provider_record_id"] = "provider_reference"
	m.Columns["recipient"] = "recipient_address"
	in = inspect(t, pool, m)
	if in.Usable || !hasRefusal(in, "provider_reference", "ledger.columns.provider_record_id", `no column "provider_reference"`) ||
		!hasRefusal(in, "recipient_address", `ledger.columns.recipient = ""`) {
		t.Errorf("refusals %q", in.Refusals)
	}
	if c := column(in, "provider_record_id"); c.Found || !c.Required {
		t.Errorf("provider_record_id: %+v", c)
	}

	// Wrong types: timestamp without time zone (said why) and a text id.
	exec(`CREATE TABLE public.naive (id text PRIMARY KEY, idem_key text UNIQUE, channel text, kind text, to_addr text,
		body_sha256 text, state text, tries integer, first_try timestamp, last_try timestamptz, provider_ref text)`)
	m.Table = "public.naive"
	m.Columns = outboundMapping.Columns
	in = inspect(t, pool, m)
	if in.Usable || !hasRefusal(in, "first_try", "timestamp without time zone", "TimeZone", `ALTER TABLE "public"."naive" ALTER COLUMN "first_try" TYPE timestamptz`) ||
		!hasRefusal(in, "column id (ledger.columns.id): type text", "integer id") {
		t.Errorf("refusals %q", in.Refusals)
	}
	if c := column(in, "first_attempt_at"); !c.Found || c.TypeOK || c.Type != "timestamp without time zone" {
		t.Errorf("first_attempt_at: %+v", c)
	}

	// Not a table, and no table at all.
	exec(`CREATE VIEW public.outbound_view AS SELECT * FROM public.outbound_log`)
	m.Table = "public.outbound_view"
	if in = inspect(t, pool, m); in.Usable || in.Exists || in.Kind != "view" || !hasRefusal(in, "is a view, not a table") {
		t.Errorf("view: %+v", in)
	}
	// A partitioned table cannot hold id and op_key unique each alone.
	exec(`CREATE TABLE public.parted (LIKE public.outbound_log INCLUDING DEFAULTS) PARTITION BY HASH (idem_key);
		ALTER TABLE public.parted ADD PRIMARY KEY (id, idem_key), ADD UNIQUE (idem_key);
		CREATE TABLE public.parted_0 PARTITION OF public.parted FOR VALUES WITH (MODULUS 2, REMAINDER 0);
		CREATE TABLE public.parted_1 PARTITION OF public.parted FOR VALUES WITH (MODULUS 2, REMAINDER 1);
		CREATE INDEX ON public.parted (channel) WHERE state = 'check'`)
	m.Table = "public.parted"
	m.Columns = outboundMapping.Columns
	in = inspect(t, pool, m)
	if in.Usable || in.Kind != "partitioned table" || !in.Exists || !hasRefusal(in, "column id (ledger.columns.id) has no unique index") ||
		hasRefusal(in, "ledger.columns.op_key") || !slices.Equal(in.Indexes[3].By, []string{"parted_0_channel_idx", "parted_1_channel_idx"}) {
		t.Errorf("partitioned: %q %+v", in.Refusals, in.Indexes)
	}

	m.Table = "public.Outbound_Log"
	if in = inspect(t, pool, m); in.Usable || in.Kind != "" || !hasRefusal(in, "public.Outbound_Log does not exist") {
		t.Errorf("missing table: %+v", in)
	}

	// An enum status without a label for a mapped word.
	exec(`CREATE TYPE public.send_state AS ENUM ('queued', 'sent', 'review', 'bounced');
		CREATE TABLE public.enum_log (LIKE public.outbound_log INCLUDING DEFAULTS INCLUDING INDEXES);
		ALTER TABLE public.enum_log DROP COLUMN state, ADD COLUMN state public.send_state NOT NULL DEFAULT 'queued'`)
	m.Table = "public.enum_log"
	m.Statuses = map[ledger.Status]string{"pending": "queued", "done": "sent", "review": "check", "failed": "bounced"}
	if in = inspect(t, pool, m); in.Usable || !hasRefusal(in, `the enum send_state has no label "check"`) {
		t.Errorf("enum: %q", in.Refusals)
	}
	m.Statuses = map[ledger.Status]string{"pending": "queued", "done": "sent", "review": "review", "failed": "bounced"}
	if in = inspect(t, pool, m); !in.Usable || in.WordsFrom != "enum" || len(in.UnnamedWords) != 0 {
		t.Errorf("enum: %+v", in)
	}
}

// TestInspectProposesIndexes: on a table with only its keys, every read
// is reported unserved with a CREATE INDEX CONCURRENTLY statement on its
// quoted names; run, each statement serves its read.
func TestInspectProposesIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "Shop Data";
		CREATE TABLE "Shop Data"."Send Log" ("Id" integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "Key" text UNIQUE NOT NULL,
			"user" text NOT NULL, "Hash" char(64) NOT NULL, "select" text NOT NULL, "At" timestamptz NOT NULL, "Ref" text,
			"When Done" timestamptz)`); err != nil {
		t.Fatal(err)
	}
	m := ledger.Mapping{
		Table: "Shop Data.Send Log",
		Columns: map[string]string{"id": "Id", "op_key": "Key", "provider": "user", "payload_hash": "Hash",
			"status": "select", "first_attempt_at": "At", "provider_record_id": "Ref", "updated_at": "When Done",
			"workflow": "", "action": "", "source_id": "", "recipient": "", "payload": "", "attempts": "",
			"last_attempt_at": "", "created_at": ""},
		Statuses: map[ledger.Status]string{"pending": "new", "done": "ok", "review": "look", "failed": "no"},
	}
	in := inspect(t, pool, m)
	if !in.Usable {
		t.Fatalf("refused: %q", in.Refusals)
	}
	want := map[string]string{
		"stale scan":     `CREATE INDEX CONCURRENTLY "Send Log_sweeper_stale" ON "Shop Data"."Send Log" ("user", "At", "Id") WHERE "select" = 'new';`,
		"record holders": `CREATE INDEX CONCURRENTLY "Send Log_sweeper_record" ON "Shop Data"."Send Log" ("Ref", "user") WHERE "Ref" IS NOT NULL;`,
		"look-alikes":    `CREATE INDEX CONCURRENTLY "Send Log_sweeper_lookalike" ON "Shop Data"."Send Log" ("Hash", "user") WHERE "select" IN ('new', 'look');`,
		"review queue":   `CREATE INDEX CONCURRENTLY "Send Log_sweeper_review" ON "Shop Data"."Send Log" ("user") WHERE "select" = 'look';`,
		"settled count":  `CREATE INDEX CONCURRENTLY "Send Log_sweeper_settled" ON "Shop Data"."Send Log" ("user", "When Done") WHERE "select" IN ('ok', 'no');`,
	}
	for _, ix := range in.Indexes {
		if ix.Served() || ix.Create != want[ix.Purpose] {
			t.Errorf("%s: served by %v, create\n%s\nwant\n%s", ix.Purpose, ix.By, ix.Create, want[ix.Purpose])
		}
		if !slices.ContainsFunc(in.Warnings, func(w string) bool { return strings.Contains(w, "the "+ix.Purpose+" read") }) {
			t.Errorf("no warning for %s", ix.Purpose)
		}
	}
	// The stand-in for an absent updated_at is an expression: indexed as one.
	standIn := m
	standIn.Columns = map[string]string{}
	for k, v := range m.Columns {
		standIn.Columns[k] = v
	}
	standIn.Columns["updated_at"] = ""
	standIn.Columns["last_attempt_at"] = "When Done"
	if ix := inspect(t, pool, standIn).Indexes[4]; ix.Purpose != "settled count" ||
		ix.Create != `CREATE INDEX CONCURRENTLY "Send Log_sweeper_settled" ON "Shop Data"."Send Log" ("user", (coalesce("When Done", "At"))) WHERE "select" IN ('ok', 'no');` {
		t.Errorf("settled: %+v", ix)
	}

	for _, ix := range in.Indexes {
		if _, err := pool.Exec(ctx, strings.TrimSuffix(ix.Create, ";")); err != nil {
			t.Fatalf("%s: %v", ix.Create, err)
		}
	}
	in = inspect(t, pool, m)
	if len(in.Indexes) != 5 {
		t.Fatalf("indexes: %+v", in.Indexes)
	}
	for _, ix := range in.Indexes {
		if !ix.Served() || ix.Create != "" || !slices.ContainsFunc(ix.By, func(by string) bool { return strings.Contains(want[ix.Purpose], `"`+by+`"`) }) {
			t.Errorf("%s not served by the index created for it: %+v", ix.Purpose, ix)
		}
	}

}

// TestInspectNative: ledger.operations is not inspected.
func TestInspectNative(t *testing.T) {
	t.Parallel()
	if _, err := ledger.Inspect(context.Background(), dbtest.NewPool(t), ledger.Native()); err == nil {
		t.Fatal("inspected ledger.operations")
	}
}

// TestInspectWordsFromStatistics: when the scan for status words takes
// longer than its statement_timeout, the words come from pg_stats' most
// common values, and the inspection says so. Not parallel: it shortens
// the package's timeout.
func TestInspectWordsFromStatistics(t *testing.T) {
	ctx := context.Background()
	pool, tbl := adopted(t)
	if _, err := pool.Exec(ctx, `INSERT INTO public."Outbound Log" ("IdemKey", channel, kind, body_sha256, "order")
		SELECT 'k' || i, 'sms', 'send', repeat('a', 64), CASE WHEN i % 50 = 0 THEN 'bounced' ELSE 'queued' END
		FROM generate_series(1, 200000) AS i;
		ANALYZE public."Outbound Log"`); err != nil {
		t.Fatal(err)
	}
	in, err := ledger.Inspect(ctx, pool, tbl)
	if err != nil || in.WordsFrom != "data" || !slices.Equal(in.UnnamedWords, []string{"bounced"}) {
		t.Fatalf("from the rows: %v %s %v", err, in.WordsFrom, in.UnnamedWords)
	}
	defer ledger.SetWordsTimeout("1ms")()
	in, err = ledger.Inspect(ctx, pool, tbl)
	if err != nil || in.WordsFrom != "statistics" || !slices.Equal(in.UnnamedWords, []string{"bounced"}) {
		t.Fatalf("from the statistics: %v %s %v", err, in.WordsFrom, in.UnnamedWords)
	}
}

// TestInspectRefusesNullableRequiredColumns: docs/ledger.md's log table as a shop
// writes it, every column but its key nullable, is refused — each
// required column that allows NULL named, with the ALTER TABLE statement
// that fixes it — except provider_record_id, NULL until done, and the
// optional columns; a domain's NOT NULL counts. Once the statements run,
// it is usable.
func TestInspectRefusesNullableRequiredColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	if _, err := pool.Exec(ctx, `CREATE DOMAIN public.sha256 AS text NOT NULL;
		CREATE TABLE public.outbound_log (id bigserial PRIMARY KEY, idem_key text UNIQUE, channel text, kind text,
		to_addr text, body_sha256 public.sha256, state text DEFAULT 'queued', tries integer, first_try timestamptz,
		last_try timestamptz, provider_ref text)`); err != nil {
		t.Fatal(err)
	}
	in := inspect(t, pool, outboundMapping)
	var fixes []string
	for _, c := range []struct{ key, col string }{
		{"op_key", "idem_key"}, {"provider", "channel"}, {"status", "state"}, {"first_attempt_at", "first_try"},
	} {
		fix := `ALTER TABLE "public"."outbound_log" ALTER COLUMN "` + c.col + `" SET NOT NULL;`
		if !hasRefusal(in, "column "+c.col+" (ledger.columns."+c.key+"): allows NULL", "invalid_operation", fix) {
			t.Errorf("no refusal of %s with %s: %q", c.col, fix, in.Refusals)
		}
		if col := column(in, c.key); !col.Nullable || col.Problem == "" {
			t.Errorf("%s: %+v", c.key, col)
		}
		fixes = append(fixes, strings.TrimSuffix(fix, ";"))
	}
	if in.Usable || len(in.Refusals) != 4 {
		t.Errorf("usable %v, refusals %q: want the four nullable required columns alone", in.Usable, in.Refusals)
	}
	for _, key := range []string{"payload_hash", "provider_record_id", "recipient", "action", "attempts"} {
		if col := column(in, key); col.Problem != "" || col.Nullable != (key != "payload_hash") {
			t.Errorf("%s: %+v", key, col)
		}
	}
	for _, fix := range fixes {
		if _, err := pool.Exec(ctx, fix); err != nil {
			t.Fatalf("%s: %v", fix, err)
		}
	}
	if in = inspect(t, pool, outboundMapping); !in.Usable {
		t.Errorf("after the fixes: %q", in.Refusals)
	}
}
