package migrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// guardFixture writes, as sweeper would, a pending row, a done row, a row in
// review with its open ticket and a done row whose ticket is resolved; then
// it withdraws the declaration, so that what follows in the transaction is
// any other writer.
const guardFixture = `
	SELECT set_config('sweeper.writer', 'sweeper', true);
	INSERT INTO ledger.operations (op_key, workflow, provider, action, recipient, payload_hash, payload,
	                               status, provider_record_id, first_attempt_at)
	VALUES ('g-pending', 'wf', 'mailer', 'send_email', 'a@example.com', repeat('a', 64), '{"to":"a@example.com"}',
	        'pending', NULL, now() - interval '1 hour'),
	       ('g-done', 'wf', 'mailer', 'send_email', 'a@example.com', repeat('a', 64), '{"to":"a@example.com"}',
	        'done', 'rec_done', now() - interval '1 hour'),
	       ('g-review', 'wf', 'mailer', 'send_email', 'a@example.com', repeat('a', 64), '{"to":"a@example.com"}',
	        'review', NULL, now() - interval '1 hour'),
	       ('g-settled', 'wf', 'mailer', 'send_email', 'a@example.com', repeat('a', 64), '{"to":"a@example.com"}',
	        'done', 'rec_settled', now() - interval '1 hour');
	INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
	SELECT id, op_key, 'not_found', 'U0OWNER', 'normal', now() + interval '4 hours', '{}'
	FROM ledger.operations WHERE op_key IN ('g-review', 'g-settled');
	UPDATE sweeper.tickets SET state = 'resolved', resolution = 'done', resolved_at = now(), resolved_by = 'U0A'
	WHERE op_key = 'g-settled';
	SELECT set_config('sweeper.writer', '', true);`

// insertOp is an INSERT of one operation with the given status, record id
// and first_attempt_at (SQL expressions).
func insertOp(key, status, recordID, firstAttemptAt string) string {
	return fmt.Sprintf(`INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status,
		provider_record_id, first_attempt_at) VALUES ('%s', 'wf', 'mailer', 'send_email', repeat('a', 64), '%s', %s, %s)`,
		key, status, recordID, firstAttemptAt)
}

type guardCase struct {
	desc string
	sql  string
	// asSweeper runs sql after SET LOCAL sweeper.writer = 'sweeper'.
	asSweeper bool
	// constraint is the name the refusal carries; "" means the write must
	// succeed and change at least one row.
	constraint string
	// message is part of the refusal's message.
	message string
}

func guardCases() []guardCase {
	cases := []guardCase{
		// An operation's identity.
		{desc: "sweeper changes a payload hash", asSweeper: true,
			sql:        `UPDATE ledger.operations SET payload_hash = repeat('b', 64) WHERE op_key = 'g-pending'`,
			constraint: "operations_identity_final", message: "g-pending: payload_hash cannot change once inserted"},
		{desc: "clear the payload hash of a pending row",
			sql:        `UPDATE ledger.operations SET payload_hash = NULL WHERE op_key = 'g-pending'`,
			constraint: "operations_identity_final", message: "payload_hash cannot change"},
		{desc: "change several columns at once",
			sql:        `UPDATE ledger.operations SET workflow = 'x', recipient = NULL WHERE op_key = 'g-pending'`,
			constraint: "operations_identity_final", message: "workflow, recipient cannot change once inserted; to attempt another effect, write a new operation"},
		{desc: "rewrite the payload with the same JSON",
			sql: `UPDATE ledger.operations SET payload = '{ "to" : "a@example.com" }' WHERE op_key = 'g-pending'`},
		{desc: "count another attempt on a pending row",
			sql: `UPDATE ledger.operations SET attempts = attempts + 1, last_attempt_at = now() WHERE op_key = 'g-pending'`},

		// first_attempt_at.
		{desc: "age a pending row",
			sql: `UPDATE ledger.operations SET first_attempt_at = now() - interval '2 hours' WHERE op_key = 'g-pending'`},
		{desc: "move first_attempt_at of a done row",
			sql:        `UPDATE ledger.operations SET first_attempt_at = now() - interval '2 hours' WHERE op_key = 'g-done'`,
			constraint: "operations_first_attempt_at_final", message: "g-done: first_attempt_at cannot change once the row has left pending (it is done)"},
		{desc: "move first_attempt_at while confirming",
			sql: `UPDATE ledger.operations SET status = 'done', provider_record_id = 'rec_new',
				first_attempt_at = now() - interval '2 hours' WHERE op_key = 'g-pending'`,
			constraint: "operations_first_attempt_at_final", message: "first_attempt_at cannot change"},
		{desc: "insert first_attempt_at infinity", sql: insertOp("g-new", "pending", "NULL", "'infinity'"),
			constraint: "operations_first_attempt_at_check", message: "g-new: first_attempt_at infinity is not when an attempt was made: it must be finite and at most 5 minutes (clock skew)"},
		{desc: "insert first_attempt_at -infinity", sql: insertOp("g-new", "pending", "NULL", "'-infinity'"),
			constraint: "operations_first_attempt_at_check", message: "first_attempt_at -infinity"},
		{desc: "insert first_attempt_at an hour ahead", sql: insertOp("g-new", "pending", "NULL", "now() + interval '1 hour'"),
			constraint: "operations_first_attempt_at_check", message: "at most 5 minutes"},
		{desc: "insert first_attempt_at within the skew allowance", sql: insertOp("g-new", "pending", "NULL", "now() + interval '4 minutes'")},
		{desc: "insert first_attempt_at long ago", sql: insertOp("g-new", "pending", "NULL", "'2001-02-03 04:05:06+00'")},
		{desc: "push a pending row's first_attempt_at to infinity",
			sql:        `UPDATE ledger.operations SET first_attempt_at = 'infinity' WHERE op_key = 'g-pending'`,
			constraint: "operations_first_attempt_at_check", message: "g-pending: first_attempt_at infinity"},

		// done needs its record.
		{desc: "set done without a record id",
			sql:        `UPDATE ledger.operations SET status = 'done' WHERE op_key = 'g-pending'`,
			constraint: "operations_done_record_id_check"},
		{desc: "insert done without a record id", sql: insertOp("g-new", "done", "NULL", "now()"),
			constraint: "operations_done_record_id_check"},
		{desc: "insert done with a record id", sql: insertOp("g-new", "done", "'rec_new'", "now()")},
		{desc: "insert failed", sql: insertOp("g-new", "failed", "NULL", "now()")},
		{desc: "settle review as done without a record id",
			sql:        `UPDATE ledger.operations SET status = 'done' WHERE op_key = 'g-review'`,
			constraint: "operations_done_record_id_check"},

		// review is sweeper's.
		{desc: "move pending to review",
			sql:        `UPDATE ledger.operations SET status = 'review' WHERE op_key = 'g-pending'`,
			constraint: "operations_review_by_sweeper",
			message:    "g-pending: only sweeper moves a row to review; leave the row pending: sweeper moves it to review and opens its ticket in the same transaction"},
		{desc: "move pending to review as sweeper", asSweeper: true,
			sql: `UPDATE ledger.operations SET status = 'review' WHERE op_key = 'g-pending'`},
		{desc: "insert in review", sql: insertOp("g-new", "review", "NULL", "now()"),
			constraint: "operations_review_by_sweeper", message: "leave the row pending"},
		{desc: "insert in review as sweeper", asSweeper: true, sql: insertOp("g-new", "review", "NULL", "now()")},
		{desc: "touch a row in review",
			sql: `UPDATE ledger.operations SET attempts = attempts + 1 WHERE op_key = 'g-review'`},
		{desc: "settle a row in review",
			sql: `UPDATE ledger.operations SET status = 'failed' WHERE op_key = 'g-review'`},

		// One record, one operation.
		{desc: "a second operation names a held record", sql: insertOp("g-new", "done", "'rec_done'", "now()"),
			constraint: "operations_provider_record_idx"},
		{desc: "confirm with a held record",
			sql:        `UPDATE ledger.operations SET status = 'done', provider_record_id = 'rec_done' WHERE op_key = 'g-pending'`,
			constraint: "operations_provider_record_idx"},
		{desc: "another provider's record of the same id",
			sql: `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, provider_record_id)
				VALUES ('g-new', 'wf', 'sms', 'send_sms', repeat('a', 64), 'done', 'rec_done')`},

		// Deleting.
		{desc: "delete a row with an open ticket",
			sql:        `DELETE FROM ledger.operations WHERE op_key = 'g-review'`,
			constraint: "operations_open_ticket", message: "g-review: ticket"},
		{desc: "delete a row whose ticket is resolved",
			sql: `DELETE FROM ledger.operations WHERE op_key = 'g-settled'`},
		{desc: "delete a row without a ticket",
			sql: `DELETE FROM ledger.operations WHERE op_key = 'g-done'`},

		// Tickets.
		{desc: "change a ticket's reason",
			sql:        `UPDATE sweeper.tickets SET reason = 'lookup_failed' WHERE op_key = 'g-review'`,
			constraint: "tickets_record_final", message: "reason cannot change"},
		{desc: "change a ticket's reason as sweeper", asSweeper: true,
			sql:        `UPDATE sweeper.tickets SET reason = 'lookup_failed' WHERE op_key = 'g-review'`,
			constraint: "tickets_record_final", message: "reason cannot change"},
		{desc: "change a ticket's created_at",
			sql:        `UPDATE sweeper.tickets SET created_at = now() - interval '1 day' WHERE op_key = 'g-review'`,
			constraint: "tickets_record_final", message: "created_at cannot change"},
		{desc: "take a ticket's deadline and owner",
			sql:        `UPDATE sweeper.tickets SET owner = 'U0ME', deadline = now() + interval '1 year' WHERE op_key = 'g-review'`,
			constraint: "tickets_escalation_by_sweeper", message: "owner, deadline change only by sweeper's escalation; to take the ticket, acknowledge it"},
		{desc: "change a ticket's priority",
			sql:        `UPDATE sweeper.tickets SET priority = 'low' WHERE op_key = 'g-review'`,
			constraint: "tickets_escalation_by_sweeper", message: "priority change only by sweeper's escalation"},
		{desc: "raise a ticket's escalation",
			sql:        `UPDATE sweeper.tickets SET escalation_level = 1, repeat_count = 1, escalation_exhausted = true WHERE op_key = 'g-review'`,
			constraint: "tickets_escalation_by_sweeper", message: "escalation_level, repeat_count, escalation_exhausted change only"},
		{desc: "escalate a ticket as sweeper", asSweeper: true,
			sql: `UPDATE sweeper.tickets SET owner = 'U0NEXT', escalation_level = 1, deadline = now() + interval '1 hour',
				version = version + 1 WHERE op_key = 'g-review'`},
		{desc: "acknowledge a ticket",
			sql: `UPDATE sweeper.tickets SET acknowledged_by = 'U0ME', acknowledged_at = now(), acknowledged_level = 0,
				version = version + 1 WHERE op_key = 'g-review'`},
	}
	for _, key := range []string{"g-pending", "g-done"} {
		for _, c := range []struct{ column, value string }{
			{"workflow", "'other'"}, {"provider", "'other'"}, {"action", "'other'"},
			{"recipient", "'b@example.com'"}, {"payload_hash", "repeat('b', 64)"}, {"payload", `'{"to":"b@example.com"}'`},
		} {
			cases = append(cases, guardCase{
				desc:       fmt.Sprintf("change %s of %s", c.column, key),
				sql:        fmt.Sprintf(`UPDATE ledger.operations SET %s = %s WHERE op_key = '%s'`, c.column, c.value, key),
				constraint: "operations_identity_final",
				message:    fmt.Sprintf("%s: %s cannot change once inserted", key, c.column),
			})
		}
	}
	return cases
}

// TestGuardsRefuseOtherWriters writes with plain SQL, as a workflow or a
// person with psql could, and checks that each write the ledger contract
// forbids is refused with its constraint and a message saying why, and that
// the writes it allows go through.
func TestGuardsRefuseOtherWriters(t *testing.T) {
	t.Parallel()
	for _, tc := range guardCases() {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			if _, err := tx.Exec(ctx, guardFixture); err != nil {
				t.Fatalf("fixture: %v", err)
			}
			if tc.asSweeper {
				if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
					t.Fatal(err)
				}
			}
			tag, err := tx.Exec(ctx, tc.sql)
			if tc.constraint == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tag.RowsAffected() == 0 {
					t.Fatalf("%s changed no row", tag)
				}
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				t.Fatalf("accepted (err = %v), want a refusal by %s", err, tc.constraint)
			}
			if pgErr.ConstraintName != tc.constraint {
				t.Errorf("refused by %q (%s), want %s", pgErr.ConstraintName, pgErr.Message, tc.constraint)
			}
			if !strings.Contains(pgErr.Message, tc.message) {
				t.Errorf("message %q, want it to contain %q", pgErr.Message, tc.message)
			}
		})
	}
}

// TestGuardsRefuseTruncate: TRUNCATE skips row triggers, so each table
// refuses it as a statement: sweeper's tables always, with or without
// CASCADE; the ledger while a ticket is open. TRUNCATE takes the table's
// strongest lock, so these run one at a time in a database of their own.
func TestGuardsRefuseTruncate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	for _, tc := range []struct {
		desc    string
		fixture bool
		sql     string
		// code is the SQLSTATE of the refusal; "" means it must succeed.
		code, constraint, message string
	}{
		{desc: "tickets (refused by their events' foreign key)", sql: `TRUNCATE sweeper.tickets`, code: "0A000"},
		{desc: "tickets cascading to events and outbox", sql: `TRUNCATE sweeper.tickets CASCADE`,
			code: "23514", constraint: "tickets_append_only", message: "sweeper.tickets: truncate is not allowed"},
		{desc: "all three together", sql: `TRUNCATE sweeper.outbox, sweeper.ticket_events, sweeper.tickets`,
			code: "23514", constraint: "outbox_append_only", message: "sweeper.outbox: truncate is not allowed"},
		{desc: "ticket events cascading to the outbox", sql: `TRUNCATE sweeper.ticket_events CASCADE`,
			code: "23514", constraint: "ticket_events_append_only", message: "sweeper.ticket_events: truncate is not allowed"},
		{desc: "outbox", sql: `TRUNCATE sweeper.outbox`,
			code: "23514", constraint: "outbox_append_only", message: "sweeper.outbox: truncate is not allowed"},
		{desc: "outbox, cascading", sql: `TRUNCATE sweeper.outbox CASCADE`,
			code: "23514", constraint: "outbox_append_only"},
		{desc: "ledger with an open ticket", fixture: true, sql: `TRUNCATE ledger.operations`,
			code: "23001", constraint: "operations_open_ticket", message: "ledger.operations: truncate refused while 1 tickets are open; resolve them first"},
		{desc: "ledger with an open ticket, cascading", fixture: true, sql: `TRUNCATE ledger.operations CASCADE`,
			code: "23001", constraint: "operations_open_ticket"},
		{desc: "ledger without open tickets", sql: `TRUNCATE ledger.operations`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // nothing here is kept
			if tc.fixture {
				if _, err := tx.Exec(ctx, guardFixture); err != nil {
					t.Fatalf("fixture: %v", err)
				}
			}
			_, err = tx.Exec(ctx, tc.sql)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				t.Fatalf("accepted (err = %v), want SQLSTATE %s", err, tc.code)
			}
			if pgErr.Code != tc.code || pgErr.ConstraintName != tc.constraint || !strings.Contains(pgErr.Message, tc.message) {
				t.Errorf("refusal %s %q %q, want %s %q containing %q", pgErr.Code, pgErr.ConstraintName, pgErr.Message,
					tc.code, tc.constraint, tc.message)
			}
		})
	}
}

// TestGuardsLetSweeperWrite runs sweeper's own writes, each in a
// transaction of its own as in production, so that one declaring itself
// does not cover for another: opening tickets and settling rows (Apply),
// escalating, acknowledging, resolving by a person and by a re-lookup. The
// declaration ends with each transaction.
func TestGuardsLetSweeperWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	ops := ledger.NewStore(pool, ledger.Native())
	store := review.NewStore(pool, ledger.Native(), review.Policy{DefaultOwner: "U0OWNER", Window: time.Hour, Priority: "normal"})
	now := time.Now().UTC().Truncate(time.Microsecond)

	apply := func(key string, records ...providers.Record) review.Applied {
		t.Helper()
		c, err := ops.Claim(ctx, ledger.Attempt{OpKey: key, Workflow: "wf", Provider: "mailer", Action: "send_email",
			Recipient: "a@example.com", Payload: json.RawMessage(`{"to":"a@example.com"}`)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range records {
			records[i].PayloadHash = c.Operation.PayloadHash
			records[i].CreatedAt = c.Operation.FirstAttemptAt
		}
		out := proof.Answered(proof.SearchFor(c.Operation, providers.Matching{ByKey: true}, time.Now()), records)
		d := proof.Decide(c.Operation, out)
		applied, err := store.Apply(ctx, c.Operation, d, proof.NewEvidence(c.Operation, proof.LookupReport{Adapter: "sim", Outcome: out, At: now}, d), now)
		if err != nil || !applied.Settled {
			t.Fatalf("Apply %s = %+v, %v", key, applied, err)
		}
		return applied
	}
	if applied := apply("s-found", providers.Record{ID: "rec_found"}); applied.TicketID != 0 {
		t.Errorf("a found record opened ticket %d", applied.TicketID)
	}
	escalated := apply("s-escalated").TicketID
	relooked := apply("s-relooked").TicketID
	resolved := apply("s-resolved").TicketID

	tk, err := store.EscalationTicket(ctx, escalated)
	if err != nil {
		t.Fatal(err)
	}
	policy := review.Escalation{FirstWindow: time.Hour, Levels: []review.EscalationLevel{{Owner: "U0NEXT", Priority: "urgent", Window: time.Hour}}}
	if taken, err := store.Escalate(ctx, tk, policy.Next(tk.EscalationState, tk.Deadline.Add(time.Minute)), nil, nil); err != nil || !taken {
		t.Fatalf("Escalate = %v, %v", taken, err)
	}
	if _, err := store.Acknowledge(ctx, escalated, "U0NEXT", 0); err != nil {
		t.Fatalf("Acknowledge: %v", err)
	}
	tk, err = store.EscalationTicket(ctx, escalated)
	if err != nil {
		t.Fatal(err)
	}
	if held := policy.Next(tk.EscalationState, tk.Deadline.Add(time.Minute)); held.Kind != review.EscalationHeld {
		t.Fatalf("step %s, want held", held.Kind)
	} else if taken, err := store.Escalate(ctx, tk, held, nil, nil); err != nil || !taken {
		t.Fatalf("Escalate (held) = %v, %v", taken, err)
	}

	tk, err = store.EscalationTicket(ctx, relooked)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := store.ResolveByRelookup(ctx, tk, "rec_relooked", proof.Evidence{}, now, nil); err != nil || !ok {
		t.Fatalf("ResolveByRelookup = %v, %v", ok, err)
	}
	if _, err := store.Resolve(ctx, review.Resolution{TicketID: resolved, Outcome: review.ResolutionNotSent, By: "U0OWNER"}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}

	// What sweeper's transactions declared did not outlive them.
	_, err = pool.Exec(ctx, `UPDATE sweeper.tickets SET owner = 'U0ME' WHERE id = $1`, escalated)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "tickets_escalation_by_sweeper" {
		t.Errorf("owner change outside sweeper after its writes: err = %v, want tickets_escalation_by_sweeper", err)
	}
}

// TestGuardsDownUp: the guards' migration rolls back to the schema before
// it (the record index no longer unique, the triggers and constraint gone),
// and applies again — but not over two operations holding one record: it
// stops, says how many and how to list them, and applies once they are
// dealt with.
func TestGuardsDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	m := migrations.New(pool, nil)
	guards := func() (unique bool, objects int) {
		t.Helper()
		err := pool.QueryRow(ctx, `
			SELECT (SELECT indisunique FROM pg_index WHERE indexrelid = 'ledger.operations_provider_record_idx'::regclass),
			       (SELECT count(*) FROM pg_trigger WHERE tgname IN ('operations_contract', 'operations_keep_open_tickets',
			               'operations_no_truncate', 'tickets_no_truncate', 'ticket_events_no_truncate', 'outbox_no_truncate',
			               'tickets_writer_guard'))
			     + (SELECT count(*) FROM pg_constraint WHERE conname = 'operations_done_record_id_check')`).Scan(&unique, &objects)
		if err != nil {
			t.Fatal(err)
		}
		return unique, objects
	}
	if unique, objects := guards(); !unique || objects != 8 {
		t.Fatalf("after Up: index unique %v, %d guard objects; want true, 8", unique, objects)
	}

	// Back to the schema before the guards (and the migrations after them).
	if err := m.DownTo(ctx, 20261129000006); err != nil {
		t.Fatal(err)
	}
	if unique, objects := guards(); unique || objects != 0 {
		t.Fatalf("after Down: index unique %v, %d guard objects; want false, 0", unique, objects)
	}
	var def string
	if err := pool.QueryRow(ctx, `SELECT pg_get_indexdef('ledger.operations_provider_record_idx'::regclass)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if want := "CREATE INDEX operations_provider_record_idx ON ledger.operations USING btree (provider_record_id, provider) WHERE (provider_record_id IS NOT NULL)"; def != want {
		t.Errorf("after Down the index is\n%s\nwant\n%s", def, want)
	}

	// Without the guards, a ledger can come to hold one record twice.
	for _, key := range []string{"dup-1", "dup-2"} {
		if _, err := pool.Exec(ctx, insertOp(key, "done", "'rec_twice'", "now()")); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.Up(ctx)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("Up over a record held twice: err = %v, want the migration's refusal", err)
	}
	if want := "1 provider records are each named by more than one operation (2 operations in all)"; !strings.Contains(pgErr.Message, want) {
		t.Errorf("message %q, want it to contain %q", pgErr.Message, want)
	}
	if want := "GROUP BY provider, provider_record_id HAVING count(*) > 1"; !strings.Contains(pgErr.Hint, want) {
		t.Errorf("hint %q, want a query listing them (%q)", pgErr.Hint, want)
	}
	if unique, objects := guards(); unique || objects != 0 {
		t.Fatalf("a refused Up left index unique %v, %d guard objects", unique, objects)
	}

	if _, err := pool.Exec(ctx, `DELETE FROM ledger.operations WHERE op_key = 'dup-2'`); err != nil {
		t.Fatal(err)
	}
	applied, err := m.Up(ctx)
	if err != nil || len(applied) == 0 || applied[0].Version != 20261201000001 {
		t.Fatalf("Up = %v, %v; want the guards applied again", applied, err)
	}
	if unique, objects := guards(); !unique || objects != 8 {
		t.Fatalf("after Up again: index unique %v, %d guard objects; want true, 8", unique, objects)
	}
}
