package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The triggers [InstallGuards] creates on an adopted table, each calling
// a function of migration 20261207000010_adopted_guards.sql with the
// table's column names and status words as its arguments:
//
//   - sweeper_guard: statuses move forward only (on the mapped words),
//     done needs a record, the record and op_key never change once set,
//     only sweeper moves a row to review;
//   - sweeper_record_once: one record proves one operation across the
//     provider's record namespace;
//   - sweeper_open_ticket (and sweeper_open_ticket_truncate): no row with
//     an open ticket is deleted, no truncate while a ticket is open.
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

// ErrNativeGuards: ledger.operations' guards are its migrations'.
var ErrNativeGuards = errors.New("ledger.operations has its own guards, made by the migrations")

// literal is s as a SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// guardStatements are the statements that create t's guard triggers.
func (t *Table) guardStatements() []string {
	args := func(keys ...string) string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = literal(t.mustColumn(k))
		}
		return strings.Join(out, ", ")
	}
	words := make([]string, 4)
	for i, s := range []Status{StatusPending, StatusDone, StatusReview, StatusFailed} {
		w, _ := t.Word(s)
		words[i] = literal(w)
	}
	return []string{
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION sweeper.adopted_guard(%s, %s)`,
			GuardTrigger, t.name, args("op_key", "status", "provider_record_id"), strings.Join(words, ", ")),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE INSERT OR UPDATE OF %s ON %s FOR EACH ROW EXECUTE FUNCTION sweeper.adopted_record_once(%s)`,
			RecordOnceTrigger, t.columns["provider_record_id"], t.name, args("id", "op_key", "provider", "provider_record_id")),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE DELETE ON %s FOR EACH ROW EXECUTE FUNCTION sweeper.adopted_keep_open_tickets(%s)`,
			OpenTicketTrigger, t.name, args("id", "op_key")),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION sweeper.adopted_keep_open_tickets(%s)`,
			OpenTicketTruncTrigger, t.name, args("id", "op_key")),
	}
}

// GuardStatements are the statements [InstallGuards] runs, for a person
// who would rather run them.
func (t *Table) GuardStatements() []string { return t.guardStatements() }

// InstallGuards creates sweeper's guard triggers ([GuardTriggers]) on t,
// an adopted table, in one transaction: any already there are replaced,
// so that a changed mapping's names and words take effect. The functions
// they call are sweeper's migrations'; run them first.
func InstallGuards(ctx context.Context, db DB, t *Table) error {
	if t.Native() {
		return ErrNativeGuards
	}
	return inTx(ctx, db, func(tx DB) error {
		var migrated bool
		if err := tx.QueryRow(ctx, `SELECT to_regproc('sweeper.adopted_guard') IS NOT NULL`).Scan(&migrated); err != nil {
			return fmt.Errorf("install sweeper's guards on %s: %w", t.name, err)
		}
		if !migrated {
			return fmt.Errorf("install sweeper's guards on %s: the database lacks their functions (sweeper.adopted_guard …): run sweeper migrate first", t.name)
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

// RemoveGuards drops sweeper's guard triggers from t, those there.
func RemoveGuards(ctx context.Context, db DB, t *Table) error {
	if t.Native() {
		return ErrNativeGuards
	}
	return inTx(ctx, db, func(tx DB) error { return dropGuards(ctx, tx, t) })
}

func dropGuards(ctx context.Context, db DB, t *Table) error {
	for _, g := range GuardTriggers {
		if _, err := db.Exec(ctx, fmt.Sprintf(`DROP TRIGGER IF EXISTS %s ON %s`, g, t.name)); err != nil {
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
