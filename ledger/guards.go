package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The triggers [InstallGuards] creates on an adopted table. Each row
// trigger calls a function of schema sweeper made for the table alone
// ([Table.GuardFunctions]): its body, rendered from the mapping, reads the
// row's columns by their quoted names (NEW."order") and compares them with
// the table's words as literals, and its record check is a static SELECT
// on the table, planned once per session — the guards cost what
// ledger.operations' own do:
//
//   - sweeper_guard: no NULL is written into [NotNullColumns], no op_key
//     inserted empty or over-long; statuses move forward only (on the
//     mapped words),
//     done needs a record, the record and op_key never change once set,
//     only sweeper moves a row to review;
//   - sweeper_record_once: one record proves one operation across the
//     provider's record namespace;
//   - sweeper_open_ticket: no row with an open ticket is deleted;
//   - sweeper_open_ticket_truncate: no truncate while a ticket is open
//     (sweeper.adopted_no_truncate, of migration
//     20261207000010_adopted_guards.sql: it reads no column).
//
// ledger.operations has the same guards of its own.
const (
	GuardTrigger           = "sweeper_guard"
	RecordOnceTrigger      = "sweeper_record_once"
	OpenTicketTrigger      = "sweeper_open_ticket"
	OpenTicketTruncTrigger = "sweeper_open_ticket_truncate"
)

// GuardTriggers are the names of the triggers [InstallGuards] creates.
var GuardTriggers = []string{GuardTrigger, RecordOnceTrigger, OpenTicketTrigger, OpenTicketTruncTrigger}

// noTruncate is the migrations' function the truncate trigger calls; its
// presence says sweeper's schema is migrated.
const noTruncate = "sweeper.adopted_no_truncate"

// guardPrefixes start the names of the functions made for an adopted
// table, in the order of [Table.GuardFunctions].
var guardPrefixes = []string{"adopted_guard_", "adopted_record_once_", "adopted_keep_open_tickets_"}

// ErrNativeGuards: ledger.operations' guards are its migrations'.
var ErrNativeGuards = errors.New("ledger.operations has its own guards, made by the migrations")

// literal is s as a SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// literals are ss as a list of SQL string literals.
func literals(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = literal(s)
	}
	return strings.Join(out, ", ")
}

// GuardFunctions are the functions [InstallGuards] makes for t, qualified
// and quoted, in schema sweeper: the guard, the record check and the
// delete check. Each name is a prefix, the table's name reduced to
// lowercase letters, digits and underscores (at most 20), and 8 hex
// digits of the SHA-256 of schema.table, so that it is the table's alone,
// fits PostgreSQL's 63 bytes and is known without the database.
func (t *Table) GuardFunctions() []string {
	out := t.guardFunctionNames()
	for i, fn := range out {
		out[i] = pgx.Identifier{"sweeper", fn}.Sanitize()
	}
	return out
}

// guardFunctionNames are [Table.GuardFunctions], unquoted and without
// their schema.
func (t *Table) guardFunctionNames() []string {
	var slug strings.Builder
	for _, r := range strings.ToLower(t.relname) {
		if slug.Len() == 20 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			slug.WriteRune(r)
		default:
			slug.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(t.schema + "." + t.relname))
	suffix := slug.String() + "_" + hex.EncodeToString(sum[:4])
	out := make([]string, len(guardPrefixes))
	for i, p := range guardPrefixes {
		out[i] = p + suffix
	}
	return out
}

// guardFunctionOf maps each of [GuardTriggers] to the function it calls
// on t, in schema sweeper, unquoted.
func (t *Table) guardFunctionOf() map[string]string {
	fns := t.guardFunctionNames()
	return map[string]string{GuardTrigger: fns[0], RecordOnceTrigger: fns[1], OpenTicketTrigger: fns[2],
		OpenTicketTruncTrigger: strings.TrimPrefix(noTruncate, "sweeper.")}
}

// guardPlaceholder is [placeholder] and guardSQL's own.
var guardPlaceholder = regexp.MustCompile(`\{(?:known|from-pending|from-review|l:[a-z_]+)\}|` + placeholder.String())

// guardSQL renders src for t as [Table.SQL] does, in one pass (nothing a
// name or word brings is read as a placeholder), and besides {l:key}, the
// table's column of key (unquoted) as a string literal, and {known},
// {from-pending} and {from-review}, the table's words as lists of
// literals: every word it has, those pending may move to, those review
// may move to.
func (t *Table) guardSQL(src string) string {
	var known, fromPending, fromReview []string
	for _, s := range []Status{StatusPending, StatusDone, StatusReview, StatusFailed} {
		w, ok := t.words[s]
		if !ok {
			continue
		}
		known = append(known, w)
		if s != StatusPending {
			fromPending = append(fromPending, w)
		}
		if s == StatusDone || s == StatusFailed {
			fromReview = append(fromReview, w)
		}
	}
	return guardPlaceholder.ReplaceAllStringFunc(src, func(p string) string {
		switch p {
		case "{known}":
			return literals(known)
		case "{from-pending}":
			return literals(fromPending)
		case "{from-review}":
			return literals(fromReview)
		}
		if key, ok := strings.CutPrefix(p[1:len(p)-1], "l:"); ok {
			return literal(t.mustColumn(key))
		}
		return t.sqlFor(p)
	})
}

// dollarQuoted is body between dollar quotes whose tag body does not
// hold, so that no name or word of the mapping can end it.
func dollarQuoted(body string) string {
	tag := "$guard$"
	for i := 1; strings.Contains(body, tag); i++ {
		tag = fmt.Sprintf("$guard%d$", i)
	}
	return tag + body + tag
}

// The bodies of the functions made for an adopted table, written with
// [Table.SQL]'s placeholders ({c:new.status} is NEW's status column,
// quoted) and guardSQL's. They raise with the constraint names
// ledger.operations' guards use, so that the package tells their refusals
// apart the same way on either table. Words and record ids are compared
// as text (a status column may be an enum), the record's holders on the
// column's own type, so that an index on it serves the look.
const (
	// A status moves forward only: pending -> done | review | failed,
	// review -> done | failed. A row in a word the mapping does not name,
	// or moving to one, is the workflow's own business and left alone.
	// done needs its record; a record, once set, and the op_key never
	// change; only sweeper moves a row to review (it opens the ticket in
	// the same transaction).
	guardBody = `
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF {c:new.status}::text IS DISTINCT FROM {c:old.status}::text
           AND {c:old.status}::text IN ({known}) AND {c:new.status}::text IN ({known})
           AND NOT (({c:old.status}::text = {w:pending} AND {c:new.status}::text IN ({from-pending}))
                 OR ({c:old.status}::text = {w:review} AND {c:new.status}::text IN ({from-review}))) THEN
            RAISE EXCEPTION '% %: illegal status transition % -> %',
                TG_RELID::regclass, {c:old.op_key}, {c:old.status}, {c:new.status}
                USING ERRCODE = 'check_violation',
                      SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                      CONSTRAINT = 'operations_status_transition';
        END IF;
        IF {c:old.provider_record_id} IS NOT NULL
           AND {c:new.provider_record_id}::text IS DISTINCT FROM {c:old.provider_record_id}::text THEN
            RAISE EXCEPTION '% %: % cannot change once set (% -> %)',
                TG_RELID::regclass, {c:old.op_key}, {l:provider_record_id}, {c:old.provider_record_id},
                coalesce({c:new.provider_record_id}::text, 'NULL')
                USING ERRCODE = 'check_violation',
                      SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                      CONSTRAINT = 'operations_provider_record_id_final';
        END IF;
        IF {c:new.op_key}::text IS DISTINCT FROM {c:old.op_key}::text THEN
            RAISE EXCEPTION '% %: % cannot change (-> %)',
                TG_RELID::regclass, {c:old.op_key}, {l:op_key}, {c:new.op_key}
                USING ERRCODE = 'check_violation',
                      SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                      CONSTRAINT = 'operations_op_key_final';
        END IF;
    END IF;
    IF {c:new.status}::text = {w:done} AND {c:new.provider_record_id} IS NULL THEN
        RAISE EXCEPTION '% %: % (done) needs the provider''s record in %',
            TG_RELID::regclass, {c:new.op_key}, {w:done}, {l:provider_record_id}
            USING ERRCODE = 'check_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_done_record_id_check';
    END IF;
    IF {c:new.status}::text = {w:review} AND (TG_OP = 'INSERT' OR {c:old.status}::text = {w:pending})
       AND current_setting('sweeper.writer', true) IS DISTINCT FROM 'sweeper' THEN
        RAISE EXCEPTION '% %: only sweeper moves a row to % (review); leave the row %: sweeper moves it to review and opens its ticket in the same transaction',
            TG_RELID::regclass, {c:new.op_key}, {w:review}, {w:pending}
            USING ERRCODE = 'check_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_review_by_sweeper';
    END IF;
    RETURN NEW;
END
`

	// One record proves one operation across its record namespace (every
	// block reaching the provider's account), as
	// ledger.operations_record_once holds it: a row taking a record takes
	// the record's advisory lock — the key sweeper's own writes lock
	// (RecordLockKey) — and then looks for another row of the namespace's
	// blocks holding it. An adopted table may have no unique (record,
	// provider) index, so the same block's holders are looked for too.
	recordOnceBody = `
DECLARE
    sweeper_ns text;
    sweeper_holder_key text;
    sweeper_holder_block text;
BEGIN
    IF {c:new.provider_record_id} IS NULL
       OR (TG_OP = 'UPDATE' AND {c:new.provider_record_id}::text IS NOT DISTINCT FROM {c:old.provider_record_id}::text) THEN
        RETURN NEW;
    END IF;
    sweeper_ns := sweeper.record_namespace({c:new.provider}::text);
    PERFORM pg_advisory_xact_lock(hashtextextended(sweeper_ns || ':' || {c:new.provider_record_id}::text, 7));
    SELECT {c:h.op_key}::text, {c:h.provider}::text INTO sweeper_holder_key, sweeper_holder_block
    FROM {T} h
    WHERE {c:h.provider_record_id} = {c:new.provider_record_id}
      AND {c:h.provider} = ANY(sweeper.record_namespace_blocks({c:new.provider}::text))
      AND {c:h.id} IS DISTINCT FROM {c:new.id}
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '% %: provider record % already proves operation % (provider %, the same record namespace %): one record proves one operation',
            TG_RELID::regclass, {c:new.op_key}, {c:new.provider_record_id}, sweeper_holder_key, sweeper_holder_block, sweeper_ns
            USING ERRCODE = 'unique_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_record_namespace',
                  DETAIL = format('Record %s of namespace %s is held by operation %s.', {c:new.provider_record_id}, sweeper_ns, sweeper_holder_key);
    END IF;
    RETURN NEW;
END
`

	// A row with an open ticket is a question a person has not answered
	// yet: it is not deleted, as on ledger.operations (the migration's
	// sweeper.adopted_open_ticket looks for the ticket).
	keepOpenTicketsBody = `
DECLARE
    sweeper_ticket bigint;
BEGIN
    sweeper_ticket := sweeper.adopted_open_ticket({c:old.id}::bigint);
    IF sweeper_ticket IS NOT NULL THEN
        RAISE EXCEPTION '% %: ticket % is open for this operation; resolve the ticket first',
            TG_RELID::regclass, {c:old.op_key}, sweeper_ticket
            USING ERRCODE = 'restrict_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_open_ticket';
    END IF;
    RETURN OLD;
END
`
)

// notNullChecks is the guard's first part, written with guardSQL's
// placeholders: a row inserted, or updated, with NULL in one of
// [NotNullColumns] is refused — an update only when it writes the NULL,
// so that a row that held one before the guards were installed can still
// move to review and get its ticket — and so is an inserted op_key that
// ledger.operations' own check (operations_op_key_check) refuses: empty,
// or longer than [MaxOpKeyLength] characters.
func (t *Table) notNullChecks() string {
	var b strings.Builder
	for _, key := range NotNullColumns {
		fmt.Fprintf(&b, `    IF {c:new.%[1]s} IS NULL AND (TG_OP = 'INSERT' OR {c:old.%[1]s} IS NOT NULL) THEN
        RAISE EXCEPTION '%%: %% (%[1]s) may not be NULL: sweeper cannot look up or settle a row without it',
            TG_RELID::regclass, {l:%[1]s}
            USING ERRCODE = 'not_null_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME, COLUMN = {l:%[1]s},
                  CONSTRAINT = 'operations_not_null';
    END IF;
`, key)
	}
	fmt.Fprintf(&b, `    IF TG_OP = 'INSERT' AND ({c:new.op_key}::text = '' OR char_length({c:new.op_key}::text) > %d) THEN
        RAISE EXCEPTION '%%: %% (op_key) must be 1 to %d characters', TG_RELID::regclass, {l:op_key}
            USING ERRCODE = 'check_violation',
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  CONSTRAINT = 'operations_op_key_check';
    END IF;
`, MaxOpKeyLength, MaxOpKeyLength)
	return b.String()
}

// guardStatements are the statements that create t's guard functions and
// triggers.
func (t *Table) guardStatements() []string {
	fns := t.GuardFunctions()
	guard := strings.Replace(guardBody, "BEGIN\n", "BEGIN\n"+t.notNullChecks(), 1)
	function := func(name, body string) string {
		return fmt.Sprintf("CREATE OR REPLACE FUNCTION %s() RETURNS trigger\nLANGUAGE plpgsql AS %s", name, dollarQuoted(t.guardSQL(body)))
	}
	comment := func(name, what string) string {
		return fmt.Sprintf("COMMENT ON FUNCTION %s() IS %s", name,
			literal(fmt.Sprintf("sweeper's %s of %s, made by sweeper adopt --apply --guards from the [ledger] mapping", what, t.name)))
	}
	return []string{
		function(fns[0], guard),
		comment(fns[0], "guard"),
		function(fns[1], recordOnceBody),
		comment(fns[1], "one-record-one-operation check"),
		function(fns[2], keepOpenTicketsBody),
		comment(fns[2], "open-ticket check"),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION %s()`,
			GuardTrigger, t.name, fns[0]),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT OR UPDATE OF %s ON %s FOR EACH ROW EXECUTE FUNCTION %s()`,
			RecordOnceTrigger, t.columns["provider_record_id"], t.name, fns[1]),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE DELETE ON %s FOR EACH ROW EXECUTE FUNCTION %s()`,
			OpenTicketTrigger, t.name, fns[2]),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()`,
			OpenTicketTruncTrigger, t.name, noTruncate),
	}
}

// InstallGuards creates sweeper's guard functions and triggers
// ([GuardTriggers]) on t, an adopted table, in one transaction: any
// already there are replaced, so that a changed mapping's names and words
// take effect. Run sweeper's migrations first: the guards read their
// tables.
func InstallGuards(ctx context.Context, db DB, t *Table) error {
	if t.Native() {
		return ErrNativeGuards
	}
	return inTx(ctx, db, func(tx DB) error {
		var migrated bool
		if err := tx.QueryRow(ctx, `SELECT to_regproc($1) IS NOT NULL`, noTruncate).Scan(&migrated); err != nil {
			return fmt.Errorf("install sweeper's guards on %s: %w", t.name, err)
		}
		if !migrated {
			return fmt.Errorf("install sweeper's guards on %s: the database lacks sweeper's migrations (%s …): run sweeper migrate first", t.name, noTruncate)
		}
		if err := dropGuards(ctx, tx, t); err != nil {
			return err
		}
		for _, stmt := range t.guardStatements() {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("install sweeper's guards on %s: %w", t.name, err)
			}
		}
		return nil
	})
}

// RemoveGuards drops sweeper's guard triggers from t, those there, and
// the functions made for t.
func RemoveGuards(ctx context.Context, db DB, t *Table) error {
	if t.Native() {
		return ErrNativeGuards
	}
	return inTx(ctx, db, func(tx DB) error { return dropGuards(ctx, tx, t) })
}

// dropGuards drops t's guard triggers, then the functions made for t: by
// their names and, when the table was renamed since, those its triggers
// called.
func dropGuards(ctx context.Context, db DB, t *Table) error {
	fns := t.GuardFunctions()
	var called []string
	if err := db.QueryRow(ctx, `
SELECT coalesce(array_agg(DISTINCT format('%I.%I', 'sweeper', p.proname)), '{}')
FROM pg_trigger g JOIN pg_proc p ON p.oid = g.tgfoid JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE g.tgrelid = to_regclass($1) AND g.tgname = ANY($2)
  AND n.nspname = 'sweeper' AND p.proname ~ $3`,
		t.name, GuardTriggers, "^("+strings.Join(guardPrefixes, "|")+")").Scan(&called); err != nil {
		return fmt.Errorf("remove sweeper's guards from %s: %w", t.name, err)
	}
	for _, g := range GuardTriggers {
		if _, err := db.Exec(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, g, t.name)); err != nil {
			return fmt.Errorf("remove sweeper's guards from %s: %w", t.name, err)
		}
	}
	for _, fn := range append(called, fns...) {
		if _, err := db.Exec(ctx, fmt.Sprintf(`DROP FUNCTION IF EXISTS %s()`, fn)); err != nil {
			return fmt.Errorf("remove sweeper's guards from %s: %w", t.name, err)
		}
	}
	return nil
}

// inTx runs fn in a transaction (or savepoint) of db and commits it when
// fn succeeds.
func inTx(ctx context.Context, db DB, fn func(tx DB) error) error {
	b, ok := db.(beginner)
	if !ok {
		return errors.New("need a pool, a connection or a transaction")
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit, a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
