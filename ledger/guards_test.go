package ledger_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// constraintOf is the constraint a database error names.
func constraintOf(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// TestAdoptedGuards: with sweeper's guards installed on an adopted table,
// each rule of ledger.operations refuses a workflow's bad write with the
// constraint name ledger.operations uses (so the store classifies it),
// sweeper's own writes pass, words the mapping does not name are left
// alone, and RemoveGuards takes the guards off.
func TestAdoptedGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, tbl := adopted(t)
	store := tbl.Store(pool)
	if err := ledger.InstallGuards(ctx, pool, tbl); err != nil {
		t.Fatal(err)
	}
	// Twice: a second install replaces the triggers.
	if err := ledger.InstallGuards(ctx, pool, tbl); err != nil {
		t.Fatal(err)
	}
	if in, err := ledger.Inspect(ctx, pool, tbl); err != nil || !in.GuardsInstalled() {
		t.Fatalf("guards after install: %+v %v", in.Guards, err)
	}
	if !errors.Is(ledger.InstallGuards(ctx, pool, ledger.Native()), ledger.ErrNativeGuards) {
		t.Error("installed guards on ledger.operations")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO sweeper.record_namespaces (provider, namespace) VALUES ('sms', 'twilio:AC1'), ('sms2', 'twilio:AC1')`); err != nil {
		t.Fatal(err)
	}

	ids := map[string]int64{}
	claim := func(key, provider string) {
		t.Helper()
		c, err := store.Claim(ctx, ledger.Attempt{OpKey: key, Workflow: "w", Provider: provider, Action: "send", Recipient: "+1555" + key, PayloadHash: strings.Repeat("b", 64)})
		if err != nil || !c.Owned {
			t.Fatalf("claim %s: %+v %v", key, c, err)
		}
		ids[key] = c.Operation.ID
	}
	for _, k := range []string{"done", "review", "reject", "batch", "bad", "ticket"} {
		claim(k, "sms")
	}
	claim("other-block", "sms2")

	// sweeper's writes, and a workflow's confirm and reject, pass.
	if _, err := store.Confirm(ctx, "done", "rec-1"); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if _, err := store.Reject(ctx, "reject"); err != nil {
		t.Fatalf("reject: %v", err)
	}
	moved, err := store.MoveToDone(ctx, []ledger.DoneItem{ledger.DoneItemOf(mustGet(t, store, "batch"), "rec-batch")})
	if err != nil || len(moved) != 1 || !moved[0] {
		t.Fatalf("move to done: %v %v", moved, err)
	}
	asSweeper := func(fn func(tx pgx.Tx) error) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
			t.Fatal(err)
		}
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	if err := asSweeper(func(tx pgx.Tx) error {
		_, err := tbl.Store(tx).MoveToReview(ctx, []int64{ids["review"], ids["ticket"]})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
			VALUES ($1, 'ticket', 'not_found', 'U0OWNER', 'high', now() + interval '1 hour', '{}')`, ids["ticket"])
		return err
	}); err != nil {
		t.Fatalf("move to review with its ticket: %v", err)
	}
	if ok, err := store.CompareAndSet(ctx, ids["review"], ledger.StatusReview, ledger.StatusDone, "rec-review"); err != nil || !ok {
		t.Fatalf("review -> done: %v %v", ok, err)
	}

	// Through the store: the guards' refusals are classified as on
	// ledger.operations.
	for _, c := range []struct {
		name   string
		to     ledger.Status
		record string
		want   error
		says   string
	}{
		{"review by a workflow", ledger.StatusReview, "", ledger.ErrIllegalTransition, "only sweeper moves a row to check (review)"},
		{"done without a record", ledger.StatusDone, "", ledger.ErrIllegalTransition, "sent (done) needs the provider's record in provider_ref"},
		{"a record another operation of the block holds", ledger.StatusDone, "rec-1", ledger.ErrRecordHeld, "held by operation done"},
	} {
		_, err := store.CompareAndSet(ctx, ids["bad"], ledger.StatusPending, c.to, c.record)
		if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
	// Another block of the same account: one record proves one operation
	// across the namespace.
	if _, err := tbl.Store(pool).CompareAndSet(ctx, ids["other-block"], ledger.StatusPending, ledger.StatusDone, "rec-1"); !errors.Is(err, ledger.ErrRecordHeld) {
		t.Errorf("record of another block of the namespace: %v", err)
	}

	// A workflow's own statements.
	for _, c := range []struct {
		name, sql  string
		want       error
		constraint string
	}{
		{"done back to pending", `UPDATE public."Outbound Log" SET "order" = 'queued' WHERE "IdemKey" = 'done'`, ledger.ErrIllegalTransition, "operations_status_transition"},
		{"failed to done", `UPDATE public."Outbound Log" SET "order" = 'sent', provider_ref = 'r9' WHERE "IdemKey" = 'reject'`, ledger.ErrIllegalTransition, "operations_status_transition"},
		{"record rewritten", `UPDATE public."Outbound Log" SET provider_ref = 'rec-2' WHERE "IdemKey" = 'done'`, ledger.ErrIllegalTransition, "operations_provider_record_id_final"},
		{"record cleared", `UPDATE public."Outbound Log" SET provider_ref = NULL WHERE "IdemKey" = 'done'`, ledger.ErrIllegalTransition, "operations_provider_record_id_final"},
		{"op_key rewritten", `UPDATE public."Outbound Log" SET "IdemKey" = 'renamed' WHERE "IdemKey" = 'bad'`, ledger.ErrIllegalTransition, "operations_op_key_final"},
		{"inserted done without a record", `INSERT INTO public."Outbound Log" ("IdemKey", channel, kind, body_sha256, "order") VALUES ('x', 'sms', 'send', repeat('c', 64), 'sent')`, ledger.ErrIllegalTransition, "operations_done_record_id_check"},
		{"inserted in review", `INSERT INTO public."Outbound Log" ("IdemKey", channel, kind, body_sha256, "order") VALUES ('y', 'sms', 'send', repeat('c', 64), 'check')`, ledger.ErrIllegalTransition, "operations_review_by_sweeper"},
		{"inserted holding a record", `INSERT INTO public."Outbound Log" ("IdemKey", channel, kind, body_sha256, provider_ref) VALUES ('z', 'sms2', 'send', repeat('c', 64), 'rec-batch')`, ledger.ErrRecordHeld, "operations_record_namespace"},
		{"deleted with an open ticket", `DELETE FROM public."Outbound Log" WHERE "IdemKey" = 'ticket'`, ledger.ErrRefused, "operations_open_ticket"},
		{"truncated with an open ticket", `TRUNCATE public."Outbound Log"`, ledger.ErrRefused, "operations_open_ticket"},
	} {
		_, err := pool.Exec(ctx, c.sql)
		if constraintOf(err) != c.constraint || !errors.Is(ledger.MapError(err), c.want) {
			t.Errorf("%s: %v (constraint %q), want %s", c.name, err, constraintOf(err), c.constraint)
		}
	}

	// Words the mapping does not name are the workflow's business; rows
	// without a ticket may be deleted.
	for _, sql := range []string{
		`UPDATE public."Outbound Log" SET "order" = 'archived' WHERE "IdemKey" = 'reject'`,
		`UPDATE public."Outbound Log" SET "order" = 'queued' WHERE "IdemKey" = 'reject'`,
		`UPDATE public."Outbound Log" SET tries = tries + 1, last_try = now() WHERE "IdemKey" = 'bad'`,
		`DELETE FROM public."Outbound Log" WHERE "IdemKey" = 'reject'`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}

	if err := ledger.RemoveGuards(ctx, pool, tbl); err != nil {
		t.Fatal(err)
	}
	if in, err := ledger.Inspect(ctx, pool, tbl); err != nil || in.GuardsInstalled() {
		t.Fatalf("guards after remove: %+v %v", in.Guards, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE public."Outbound Log" SET "IdemKey" = 'renamed' WHERE "IdemKey" = 'bad'`); err != nil {
		t.Errorf("op_key rewritten without the guards: %v", err)
	}
	if err := ledger.RemoveGuards(ctx, pool, tbl); err != nil {
		t.Errorf("remove again: %v", err)
	}
}

func mustGet(t *testing.T, store *ledger.Store, key string) ledger.Operation {
	t.Helper()
	op, err := store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestGuardsNeedTheMigration: the guards read sweeper's tables and call
// functions of its migrations; without them the install fails and
// changes nothing, and removing them is a no-op.
func TestGuardsNeedTheMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewEmptyDatabase(t))
	if _, err := pool.Exec(ctx, `CREATE TABLE public."Outbound Log" (pk serial PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	tbl := ledgertables.Adopted.Ledger(t)
	err := ledger.InstallGuards(ctx, pool, tbl)
	if err == nil || !strings.Contains(err.Error(), "run sweeper migrate") {
		t.Fatalf("install without the migration: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public."Outbound Log"'::regclass`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d triggers left, %v", n, err)
	}
	// Removing them, and reading the table's guards, need no migration:
	// there is nothing to remove.
	if err := ledger.RemoveGuards(ctx, pool, tbl); err != nil {
		t.Errorf("remove without the migration: %v", err)
	}
}

// TestAdoptedGuardRecordOnceConcurrent: without a unique record index, two
// workflows confirming two rows with one record at once cannot both win:
// the second waits on the record's lock and, once the first commits, is
// refused.
func TestAdoptedGuardRecordOnceConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, tbl := adopted(t)
	if err := ledger.InstallGuards(ctx, pool, tbl); err != nil {
		t.Fatal(err)
	}
	store := tbl.Store(pool)
	for _, k := range []string{"a", "b"} {
		if _, err := store.Claim(ctx, ledger.Attempt{OpKey: k, Workflow: "w", Provider: "sms", Action: "send", PayloadHash: strings.Repeat("d", 64)}); err != nil {
			t.Fatal(err)
		}
	}
	const confirm = `UPDATE public."Outbound Log" SET "order" = 'sent', provider_ref = 'shared' WHERE "IdemKey" = $1`
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx) //nolint:errcheck
	if _, err := first.Exec(ctx, confirm, "a"); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := pool.Exec(ctx, confirm, "b")
		second <- err
	}()
	// The second waits on the record's advisory lock.
	for waiting := false; !waiting; {
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-second:
			t.Fatalf("the second confirmation did not wait: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; constraintOf(err) != "operations_record_namespace" {
		t.Fatalf("second confirmation: %v", err)
	}
	if b := mustGet(t, store, "b"); b.Status != ledger.StatusPending || b.ProviderRecordID != "" {
		t.Errorf("b: %+v", b)
	}
}

// TestAdoptedGuardsHostileNames: the functions InstallGuards makes for a
// table are rendered from its mapping, and every name and word reaches
// them quoted: a schema, table and columns with capitals, spaces, quotes,
// reserved words, braces and the dollar tags a function body is quoted
// with, and words holding them too, install and guard as on any table.
// The bodies read NEW's columns and run a static SELECT (no to_jsonb, no
// EXECUTE); with failed absent, review still moves only to done; and
// RemoveGuards takes the functions off with the triggers.
func TestAdoptedGuardsHostileNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	if _, err := pool.Exec(ctx, `
CREATE SCHEMA "Shop's $guard$";
CREATE TABLE "Shop's $guard$"."Select {T} $guard1$" (
	"User ID"      bigserial PRIMARY KEY,
	"order"        text NOT NULL UNIQUE,
	"$guard$"      text NOT NULL,
	"it's {c:id}"  text NOT NULL DEFAULT '$guard$ queued',
	"rec'ord $$"   text,
	"Body"         text NOT NULL,
	"FROM"         timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		t.Fatal(err)
	}
	tbl, err := ledger.Map(ledger.Mapping{
		Table: "Shop's $guard$.Select {T} $guard1$",
		Columns: map[string]string{
			"id": "User ID", "op_key": "order", "provider": "$guard$", "status": "it's {c:id}",
			"provider_record_id": "rec'ord $$", "payload_hash": "Body", "first_attempt_at": "FROM",
			"workflow": "", "action": "", "source_id": "", "recipient": "", "payload": "", "attempts": "",
			"last_attempt_at": "", "created_at": "", "updated_at": "",
		},
		Statuses: map[ledger.Status]string{"pending": "$guard$ queued", "done": "Sent {w:done}", "review": "SELECT", "failed": ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.InstallGuards(ctx, pool, tbl); err != nil {
		t.Fatalf("install: %v\n%s", err, strings.Join(tbl.GuardStatements(), ";\n"))
	}
	if in, err := ledger.Inspect(ctx, pool, tbl); err != nil || !in.GuardsInstalled() {
		t.Fatalf("guards after install: %+v %v", in.Guards, err)
	}
	var made, dynamic int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE prosrc ~* 'to_jsonb|execute|tg_argv')
		FROM pg_proc WHERE pronamespace = 'sweeper'::regnamespace AND proname ~ '^adopted_(guard|record_once|keep_open_tickets)_'`).Scan(&made, &dynamic); err != nil || made != 3 || dynamic != 0 {
		t.Errorf("%d guard functions made for the table, %d of them read the row dynamically, %v", made, dynamic, err)
	}

	sql := func(asSweeper bool, src string) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if asSweeper {
			if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Exec(ctx, tbl.SQL(src)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	insert := func(key, provider, status string) string {
		return fmt.Sprintf(`INSERT INTO {T} ({c:op_key}, {c:provider}, {c:payload_hash}, {c:status}) VALUES ('%s', '%s', 'h', %s)`, key, provider, status)
	}
	for _, c := range []struct {
		name       string
		asSweeper  bool
		sql        string
		constraint string // "" when it must pass
	}{
		{"insert a", false, insert("a", "sms", "{w:pending}"), ""},
		{"insert b", false, insert("b", "sms", "{w:pending}"), ""},
		{"done without a record", false, `UPDATE {T} SET {c:status} = {w:done} WHERE {c:op_key} = 'a'`, "operations_done_record_id_check"},
		{"done with its record", false, `UPDATE {T} SET {c:status} = {w:done}, {c:provider_record_id} = 'r$guard$1' WHERE {c:op_key} = 'a'`, ""},
		{"a record a holds", false, `UPDATE {T} SET {c:status} = {w:done}, {c:provider_record_id} = 'r$guard$1' WHERE {c:op_key} = 'b'`, "operations_record_namespace"},
		{"record rewritten", false, `UPDATE {T} SET {c:provider_record_id} = 'r2' WHERE {c:op_key} = 'a'`, "operations_provider_record_id_final"},
		{"op_key rewritten", false, `UPDATE {T} SET {c:op_key} = 'z' WHERE {c:op_key} = 'a'`, "operations_op_key_final"},
		{"done back to pending", false, `UPDATE {T} SET {c:status} = {w:pending} WHERE {c:op_key} = 'a'`, "operations_status_transition"},
		{"a word the mapping does not name", false, `UPDATE {T} SET {c:status} = 'archived' WHERE {c:op_key} = 'a'`, ""},
		{"inserted in review", false, insert("c", "sms", "{w:review}"), "operations_review_by_sweeper"},
		{"inserted in review by sweeper", true, insert("c", "sms", "{w:review}"), ""},
		{"review back to pending", false, `UPDATE {T} SET {c:status} = {w:pending} WHERE {c:op_key} = 'c'`, "operations_status_transition"},
		{"a ticket for c", true, `INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
			SELECT {c:id}, {c:op_key}, 'not_found', 'U0OWNER', 'high', now() + interval '1 hour', '{}' FROM {T} WHERE {c:op_key} = 'c'`, ""},
		{"deleted with an open ticket", false, `DELETE FROM {T} WHERE {c:op_key} = 'c'`, "operations_open_ticket"},
		{"truncated with an open ticket", false, `TRUNCATE {T}`, "operations_open_ticket"},
		{"deleted without a ticket", false, `DELETE FROM {T} WHERE {c:op_key} = 'b'`, ""},
	} {
		err := sql(c.asSweeper, c.sql)
		if c.constraint == "" && err != nil || constraintOf(err) != c.constraint {
			t.Errorf("%s: %v, want %q", c.name, err, c.constraint)
		}
	}
	if err := sql(false, `UPDATE {T} SET {c:provider_record_id} = 'r2' WHERE {c:op_key} = 'a'`); !strings.Contains(fmt.Sprint(err), "rec'ord $$ cannot change once set") {
		t.Errorf("the refusal names the column as the table does: %v", err)
	}

	if err := ledger.RemoveGuards(ctx, pool, tbl); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = 'sweeper'::regnamespace AND proname ~ '^adopted_(guard|record_once|keep_open_tickets)_')
		+ (SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal)`, tbl.Name()).Scan(&left); err != nil || left != 0 {
		t.Errorf("after remove: %d guard functions and triggers left, %v", left, err)
	}
	if err := sql(false, `UPDATE {T} SET {c:status} = {w:pending} WHERE {c:op_key} = 'c'`); err != nil {
		t.Errorf("review back to pending without the guards: %v", err)
	}
}

// TestAdoptedGuardsAfterRename: the functions made for a table name it;
// once it is renamed, Inspect shows the guards as not installed for the
// new name's mapping, and installing them again replaces the old name's
// functions instead of leaving them behind.
func TestAdoptedGuardsAfterRename(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, tbl := adopted(t)
	if err := ledger.InstallGuards(ctx, pool, tbl); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE public."Outbound Log" RENAME TO "Outbound Log 2"`); err != nil {
		t.Fatal(err)
	}
	m := ledgertables.Adopted.Mapping(t)
	m.Table = "public.Outbound Log 2"
	renamed, err := ledger.Map(m)
	if err != nil {
		t.Fatal(err)
	}
	if in, err := ledger.Inspect(ctx, pool, renamed); err != nil || in.GuardsInstalled() || !in.Guards[3].Installed {
		t.Fatalf("guards after the rename: %+v %v", in.Guards, err)
	}
	if err := ledger.InstallGuards(ctx, pool, renamed); err != nil {
		t.Fatal(err)
	}
	if in, err := ledger.Inspect(ctx, pool, renamed); err != nil || !in.GuardsInstalled() {
		t.Fatalf("guards installed again: %+v %v", in.Guards, err)
	}
	rows, err := pool.Query(ctx, `SELECT format('%I.%I', 'sweeper', proname) FROM pg_proc
		WHERE pronamespace = 'sweeper'::regnamespace AND proname ~ '^adopted_(guard|record_once|keep_open_tickets)_' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	want := renamed.GuardFunctions()
	slices.Sort(want)
	if err != nil || strings.Join(have, " ") != strings.ReplaceAll(strings.Join(want, " "), `"`, "") {
		t.Errorf("functions: %v, want %v (%v)", have, want, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE public."Outbound Log 2" SET provider_ref = 'r1'`); err != nil {
		t.Errorf("a write after installing again: %v", err)
	}
}

// TestAdoptedGuardsRefuseNullRequiredColumns: on a table whose required
// columns allow NULL, the guards refuse a row inserted with NULL in any
// of them, an update that writes a NULL, and an inserted op_key
// ledger.operations' own check refuses (empty, over-long), each as
// ErrRefused or ErrIllegalTransition's siblings classify it; a row that
// held a NULL before the guards were installed still moves to review, so
// that it gets its ticket.
func TestAdoptedGuardsRefuseNullRequiredColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, tbl := nullableAdopted(t)
	old := insertRow(t, pool, tbl, "", map[string]string{"op_key": "NULL"})
	if err := ledger.InstallGuards(ctx, pool, tbl); err != nil {
		t.Fatal(err)
	}
	for _, key := range ledger.NotNullColumns {
		if key == "id" {
			continue // the table's primary key: NOT NULL by itself
		}
		t.Run("insert "+key+" NULL", func(t *testing.T) {
			_, err := pool.Exec(ctx, tbl.SQL(`INSERT INTO {T} ({c:op_key}, {c:provider}, {c:action}, {c:payload_hash}, {c:status}, {c:first_attempt_at})
				VALUES ('k-'||$1, 'sms', 'send', repeat('a', 64), {w:pending}, now())`), key)
			if err != nil {
				t.Fatalf("a good row is refused: %v", err)
			}
			_, err = pool.Exec(ctx, tbl.SQL(`INSERT INTO {T} ({c:op_key}, {c:provider}, {c:action}, {c:payload_hash}, {c:status}, {c:first_attempt_at})
				SELECT 'n-'||$1, 'sms', 'send', repeat('a', 64), {w:pending}, now()`), key)
			if err != nil {
				t.Fatal(err)
			}
			_, err = pool.Exec(ctx, tbl.SQL(`UPDATE {T} SET {c:`+key+`} = NULL WHERE {c:op_key} = 'n-'||$1`), key)
			if constraintOf(err) != "operations_not_null" || !errors.Is(ledger.MapError(err), ledger.ErrRefused) {
				t.Errorf("update to NULL: %v", err)
			}
			values := map[string]string{key: "NULL"}
			_, err = pool.Exec(ctx, tbl.SQL(`INSERT INTO {T} ({c:op_key}, {c:provider}, {c:action}, {c:payload_hash}, {c:status}, {c:first_attempt_at})
				SELECT `+cmp.Or(values["op_key"], "'x-'||$1")+`, `+cmp.Or(values["provider"], "'sms'")+`, 'send', `+
				cmp.Or(values["payload_hash"], "repeat('a', 64)")+`, `+cmp.Or(values["status"], "{w:pending}")+`, `+
				cmp.Or(values["first_attempt_at"], "now()")+` WHERE $1::text IS NOT NULL`), key)
			if constraintOf(err) != "operations_not_null" || !strings.Contains(err.Error(), "may not be NULL") {
				t.Errorf("insert with %s NULL: %v", key, err)
			}
		})
	}
	for _, opKey := range []string{"''", "repeat('x', 256)"} {
		_, err := pool.Exec(ctx, tbl.SQL(`INSERT INTO {T} ({c:op_key}, {c:provider}, {c:action}, {c:payload_hash}, {c:first_attempt_at})
			VALUES (`+opKey+`, 'sms', 'send', repeat('a', 64), now())`))
		if constraintOf(err) != "operations_op_key_check" {
			t.Errorf("insert op_key %s: %v", opKey, err)
		}
	}

	// The row that held a NULL before the guards moves to review.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if moved, err := tbl.Store(tx).MoveToReview(ctx, []int64{old}); err != nil || len(moved) != 1 {
		t.Fatalf("move the NULL-keyed row to review: %v %v", moved, err)
	}
}
