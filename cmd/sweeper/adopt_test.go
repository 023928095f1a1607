package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// adoptBase is a configuration without a [ledger] section.
const adoptBase = `
[database]
url = "postgres://unused"
max_conns = 4

[review]
default_owner = "U0DEFAULT1"

[providers.sms]
kind = "sim"
simulated = true
`

// outboundLogConfig adopts public.outbound_log, a workflow's log with its
// own names and words and no failed state; outboundLogTable is that log
// with a plain key and no index.
var outboundLogConfig, outboundLogTable = ledgertables.OutboundLog.Config, ledgertables.OutboundLog.DDL

// adoptDB is an empty database with ddl run in it, and the environment of
// a sweeper whose configuration is adoptBase + ledgerSection.
func adoptDB(t *testing.T, ddl, ledgerSection string) (string, map[string]string) {
	t.Helper()
	dbURL := dbtest.NewEmptyDatabase(t)
	if ddl != "" {
		pool := dbtest.Pool(t, dbURL)
		if _, err := pool.Exec(context.Background(), ddl); err != nil {
			t.Fatal(err)
		}
	}
	return dbURL, map[string]string{
		config.EnvDatabaseURL: dbURL,
		config.EnvConfig:      writeConfig(t, adoptBase+ledgerSection),
	}
}

func wantLines(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

// TestAdoptAdoptedTable: the test kit's adopted table — names with a
// space, mixed case and a reserved word — inspects as usable, every read
// served by its own index; a status word the mapping does not name is
// reported; --apply --guards migrates and installs the guards, and
// --remove-guards removes them.
func TestAdoptAdoptedTable(t *testing.T) {
	t.Parallel()
	dbURL, environ := adoptDB(t, ledgertables.Adopted.DDL+`
		INSERT INTO public."Outbound Log" ("IdemKey", channel, kind, body_sha256, "order") VALUES ('k1', 'sms', 'send', repeat('a', 64), 'bounced')`,
		ledgertables.Adopted.Config)
	r := runCLI(t, environ, "adopt")
	if r.code != exitOK {
		t.Fatalf("code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLines(t, "adopt", r.stdout,
		`Adopting "public"."Outbound Log" (table)`,
		"op_key              = IdemKey       character varying(255)",
		"status              = order         text",
		"ok       id: Outbound Log_pkey",
		"ok       op_key: Outbound Log_IdemKey_key",
		`ok       stale scan ("channel", "first_try", "pk") WHERE "order" = 'queued': served by outbound_log_pending`,
		"ok       record holders", "served by outbound_log_record",
		"ok       look-alikes", "served by outbound_log_lookalike",
		"ok       review queue", "served by outbound_log_review",
		`ok       settled count ("channel", coalesce("last_try", "first_try")) WHERE "order" IN ('sent', 'rejected'): served by outbound_log_settled`,
		"workflow: "+ledger.Absence["workflow"],
		`words the mapping does not name (read from the rows): "bounced": sweeper leaves such rows alone`,
		"Guards (sweeper adopt --apply --guards): not installed",
		"Verdict: usable")
	if strings.Contains(r.stdout, "CREATE INDEX") {
		t.Errorf("an index proposed for a served read:\n%s", r.stdout)
	}

	r = runCLI(t, environ, "adopt", "--apply", "--guards")
	if r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLines(t, "adopt --apply --guards", r.stdout, "migration(s) applied", "20261207000010_adopted_guards.sql",
		`installed sweeper's guards on "public"."Outbound Log"`)
	// The guards hold: a workflow cannot take a row to review.
	pool := dbtest.Pool(t, dbURL)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE public."Outbound Log" SET "order" = 'queued'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE public."Outbound Log" SET "order" = 'check'`); constraintName(err) != "operations_review_by_sweeper" {
		t.Errorf("a workflow's move to review with the guards: %v", err)
	}
	r = runCLI(t, environ, "adopt", "--json")
	var report adoptReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || r.code != exitOK {
		t.Fatalf("json: code %d %v\n%s", r.code, err, r.stdout)
	}
	if report.Inspection == nil || !report.Inspection.Usable || !report.Inspection.GuardsInstalled() || report.Native {
		t.Errorf("json report: %+v", report)
	}

	r = runCLI(t, environ, "adopt", "--remove-guards")
	if r.code != exitOK || !strings.Contains(r.stdout, "removed sweeper's guards") {
		t.Fatalf("remove: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := pool.Exec(ctx, `UPDATE public."Outbound Log" SET "order" = 'check'`); err != nil {
		t.Errorf("a workflow's move to review without the guards: %v", err)
	}
	r = runCLI(t, environ, "adopt")
	wantLines(t, "adopt after removing", r.stdout, "Guards (sweeper adopt --apply --guards): not installed")

	r = runCLI(t, environ, "check-config")
	wantLines(t, "check-config", r.stdout, "# ledger table: public.Outbound Log (", "id=pk", "op_key=IdemKey",
		"absent: created_at, payload, source_id, updated_at, workflow", "status words: pending=queued, done=sent, review=check, failed=rejected")
}

// TestAdoptRefusesOutboundLog: a log without a unique op_key is refused
// with the statement that adds one, every missing index is given with
// its CREATE INDEX CONCURRENTLY, and --apply applies nothing.
func TestAdoptRefusesOutboundLog(t *testing.T) {
	t.Parallel()
	dbURL, environ := adoptDB(t, outboundLogTable, outboundLogConfig)
	r := runCLI(t, environ, "adopt", "--apply", "--guards")
	if r.code != exitFailure {
		t.Fatalf("code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLines(t, "adopt", r.stdout,
		"MISSING  op_key (required)",
		`CREATE UNIQUE INDEX CONCURRENTLY "outbound_log_sweeper_op_key_key" ON "public"."outbound_log" ("idem_key");`,
		`CREATE INDEX CONCURRENTLY "outbound_log_sweeper_stale" ON "public"."outbound_log" ("channel", "first_try", "id") WHERE "state" = 'queued';`,
		`CREATE INDEX CONCURRENTLY "outbound_log_sweeper_record" ON "public"."outbound_log" ("provider_ref", "channel") WHERE "provider_ref" IS NOT NULL;`,
		`CREATE INDEX CONCURRENTLY "outbound_log_sweeper_lookalike" ON "public"."outbound_log" ("body_sha256", "channel") WHERE "state" IN ('queued', 'check');`,
		`CREATE INDEX CONCURRENTLY "outbound_log_sweeper_review" ON "public"."outbound_log" ("channel") WHERE "state" = 'check';`,
		`CREATE INDEX CONCURRENTLY "outbound_log_sweeper_settled" ON "public"."outbound_log" ("channel", (coalesce("last_try", "first_try"))) WHERE "state" = 'sent';`,
		"failed: none",
		"Verdict: refused",
		"column idem_key (ledger.columns.op_key) has no unique index",
		"Nothing applied: the table is refused.")
	var schema *string
	if err := dbtest.Pool(t, dbURL).QueryRow(context.Background(), `SELECT to_regnamespace('sweeper')::text`).Scan(&schema); err != nil || schema != nil {
		t.Errorf("sweeper's schema after a refused --apply: %v %v", schema, err)
	}

	r = runCLI(t, environ, "adopt", "--json")
	var report adoptReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || r.code != exitFailure {
		t.Fatalf("json: code %d %v\n%s", r.code, err, r.stdout)
	}
	if in := report.Inspection; in == nil || in.Usable || len(in.Refusals) != 1 || len(in.Indexes) != 5 || in.Indexes[0].Served() {
		t.Errorf("json report: %+v", report.Inspection)
	}
}

// TestAdoptReportsBadColumns: a missing column, a timestamp without time
// zone and a text id are each named, with why; the status word the
// mapping lacks is reported.
func TestAdoptReportsBadColumns(t *testing.T) {
	t.Parallel()
	_, environ := adoptDB(t, `CREATE TABLE public.outbound_log (
		id text PRIMARY KEY, idem_key text UNIQUE NOT NULL, channel text NOT NULL, kind text NOT NULL, to_addr text,
		body_sha256 text NOT NULL, state text NOT NULL, tries integer, first_try timestamp NOT NULL, last_try timestamptz);
		INSERT INTO public.outbound_log VALUES ('1', 'k', 'sms', 'send', NULL, 'h', 'queued', 1, now(), NULL),
			('2', 'k2', 'sms', 'send', NULL, 'h', 'held', 1, now(), NULL)`, outboundLogConfig)
	r := runCLI(t, environ, "adopt")
	if r.code != exitFailure {
		t.Fatalf("code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLines(t, "adopt", r.stdout,
		"WRONG    id                  = id",
		"MISSING  provider_record_id  = provider_ref",
		"WRONG    first_attempt_at    = first_try",
		"column id (ledger.columns.id): type text; sweeper needs smallint, integer or bigint",
		"column first_try (ledger.columns.first_attempt_at): type timestamp without time zone; sweeper needs timestamptz; timestamp without time zone holds no instant",
		`ALTER TABLE "public"."outbound_log" ALTER COLUMN "first_try" TYPE timestamptz USING "first_try" AT TIME ZONE`,
		`column provider_ref (ledger.columns.provider_record_id): no column "provider_ref"`,
		`words the mapping does not name (read from the rows): "held"`,
		"Verdict: refused")
}

// TestAdoptRefusesInjection: a name that would end the quoted identifier
// and run a statement of its own is refused by the configuration check,
// before any connection.
func TestAdoptRefusesInjection(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ledger, key string }{
		{strings.Replace(outboundLogConfig, `op_key = "idem_key"`, `op_key = 'idem_key"; DROP TABLE public.outbound_log; --'`, 1), "ledger.columns.op_key"},
		{strings.Replace(outboundLogConfig, `table = "public.outbound_log"`, `table = 'public.outbound_log"; DROP SCHEMA public CASCADE; --'`, 1), "ledger.table"},
	} {
		dbURL, environ := adoptDB(t, outboundLogTable, c.ledger)
		r := runCLI(t, environ, "adopt")
		if r.code != exitUsage || !strings.Contains(r.stderr, c.key) || !strings.Contains(r.stderr, `holds " or ;`) {
			t.Errorf("code %d, want %d naming %s\n%s%s", r.code, exitUsage, c.key, r.stdout, r.stderr)
		}
		var n int
		if err := dbtest.Pool(t, dbURL).QueryRow(context.Background(), `SELECT count(*) FROM public.outbound_log`).Scan(&n); err != nil {
			t.Errorf("the table after the attempt: %v", err)
		}
	}
}

// TestAdoptNative: on ledger.operations there is nothing to adopt, and
// nothing connects to a database.
func TestAdoptNative(t *testing.T) {
	t.Parallel()
	environ := map[string]string{
		config.EnvDatabaseURL: "postgres://sweeper@127.0.0.1:1/none?connect_timeout=1",
		config.EnvConfig:      writeConfig(t, adoptBase),
	}
	r := runCLI(t, environ, "adopt")
	if r.code != exitOK || !strings.Contains(r.stdout, "ledger.table is ledger.operations, sweeper's own table") {
		t.Fatalf("code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, environ, "adopt", "--json")
	var report adoptReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || !report.Native || report.Inspection != nil {
		t.Errorf("json: %v %+v", err, report)
	}
	if r = runCLI(t, environ, "adopt", "--guards"); r.code != exitUsage {
		t.Errorf("--guards without --apply: code %d", r.code)
	}
	if r = runCLI(t, environ, "adopt", "--apply", "--remove-guards"); r.code != exitUsage {
		t.Errorf("--apply with --remove-guards: code %d", r.code)
	}
	r = runCLI(t, environ, "check-config")
	wantLines(t, "check-config", r.stdout, "# ledger table: ledger.operations (sweeper's own, made by sweeper migrate)")
}

// constraintName is the constraint a database error names.
func constraintName(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// TestAdoptRefusesNullableRequiredColumns: README's log table with a
// nullable op_key (and provider, status word, first attempt) is refused by
// `adopt --apply --guards`, each column named with the ALTER TABLE ... SET
// NOT NULL statement that fixes it, and nothing is applied; once they run,
// the same command migrates and installs the guards.
func TestAdoptRefusesNullableRequiredColumns(t *testing.T) {
	t.Parallel()
	dbURL, environ := adoptDB(t, `CREATE TABLE public.outbound_log (
		id bigserial PRIMARY KEY, idem_key text, channel text, kind text, to_addr text, body_sha256 text NOT NULL,
		state text DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'check')), tries integer DEFAULT 1,
		first_try timestamptz DEFAULT now(), last_try timestamptz, provider_ref text);`+ledgertables.OutboundLogIndexes, outboundLogConfig)
	r := runCLI(t, environ, "adopt", "--apply", "--guards")
	if r.code != exitFailure {
		t.Fatalf("code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var fixes []string
	for _, c := range []struct{ key, col string }{
		{"op_key", "idem_key"}, {"provider", "channel"}, {"status", "state"}, {"first_attempt_at", "first_try"},
	} {
		fix := `ALTER TABLE "public"."outbound_log" ALTER COLUMN "` + c.col + `" SET NOT NULL;`
		wantLines(t, "adopt", r.stdout, "NULLABLE  "+c.key, "column "+c.col+" (ledger.columns."+c.key+"): allows NULL", fix)
		fixes = append(fixes, fix)
	}
	wantLines(t, "adopt", r.stdout, "Verdict: refused", "Nothing applied: the table is refused.")
	if strings.Contains(r.stdout, `"provider_ref" SET NOT NULL`) || strings.Contains(r.stdout, `"to_addr" SET NOT NULL`) {
		t.Errorf("asks for NOT NULL on a column that may be NULL:\n%s", r.stdout)
	}

	if _, err := dbtest.Pool(t, dbURL).Exec(context.Background(), strings.Join(fixes, "\n")); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, environ, "adopt", "--apply", "--guards")
	if r.code != 0 {
		t.Fatalf("after the fixes: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantLines(t, "adopt", r.stdout, "Verdict: usable", "installed sweeper's guards")
}
