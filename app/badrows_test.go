package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// badRowCase is a row sweeper cannot look up, as a workflow wrote it: the
// SQL expressions of its values that differ from a good row's, and what
// its invalid_operation ticket must say.
type badRowCase struct {
	desc       string
	values     map[string]string
	wantDetail string
}

// loosen makes the adopted table's required columns nullable, its op_key
// unbounded: the table as a shop may have it, or as it becomes when a
// constraint is dropped while sweeper runs. ledger.operations is left as
// its migrations made it.
func loosen(t *testing.T, b *bundle) {
	t.Helper()
	if b.table.Native() {
		return
	}
	if _, err := b.pool.Exec(context.Background(), `ALTER TABLE public."Outbound Log"
		ALTER COLUMN "IdemKey" DROP NOT NULL, ALTER COLUMN "IdemKey" TYPE text,
		ALTER COLUMN channel DROP NOT NULL, ALTER COLUMN kind DROP NOT NULL,
		ALTER COLUMN body_sha256 DROP NOT NULL, ALTER COLUMN body_sha256 TYPE text,
		ALTER COLUMN first_try DROP NOT NULL`); err != nil {
		t.Fatal(err)
	}
}

// insertBad inserts a pending row of provider sim, first attempted an hour
// ago, with values overriding a good row's, and returns its id.
func (b *bundle) insertBad(t *testing.T, key string, values map[string]string) int64 {
	t.Helper()
	row := map[string]string{
		"op_key": "'" + key + "'", "workflow": "'billing'", "provider": "'sim'", "action": "'send_email'",
		"recipient": "'jane.doe@example.com'", "payload_hash": "repeat('a', 64)", "first_attempt_at": "now() - interval '1 hour'",
	}
	for k, v := range values {
		row[k] = v
	}
	var cols []col
	for _, key := range ledger.ColumnNames {
		if v, ok := row[key]; ok {
			cols = append(cols, col{key, v})
		}
	}
	var id int64
	if err := b.pool.QueryRow(context.Background(), b.insert(cols, "")+b.sql(` RETURNING {c:id}::bigint`)).Scan(&id); err != nil {
		t.Fatalf("insert %s: %v", key, err)
	}
	return id
}

// ticketByID is the ticket of operation id, with its evidence decoded.
func (b *bundle) ticketByID(t *testing.T, id int64) (review.Ticket, proof.Evidence, bool) {
	t.Helper()
	var ticket int64
	if err := b.pool.QueryRow(context.Background(), `SELECT coalesce(max(id), 0) FROM sweeper.tickets WHERE operation_id = $1`, id).Scan(&ticket); err != nil {
		t.Fatal(err)
	}
	if ticket == 0 {
		return review.Ticket{}, proof.Evidence{}, false
	}
	tk, err := review.NewStore(b.pool, ledger.Native(), review.Policy{}).Get(context.Background(), ticket)
	if err != nil {
		t.Fatal(err)
	}
	var ev proof.Evidence
	if err := json.Unmarshal(tk.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	return tk, ev, true
}

// TestBadRowsBecomeTheirOwnTickets (I9): on either ledger table, rows
// sweeper cannot read as operations — a NULL in a required column, an
// over-long value, a malformed payload hash — each become their own
// invalid_operation ticket saying what is wrong (never quoting the value),
// move to review by the usual compare-and-set (on the adopted table under
// its guards, installed after the rows were written), and never come back;
// the good rows of the same provider settle in the same sweep, which
// reports no error.
func TestBadRowsBecomeTheirOwnTickets(t *testing.T) {
	t.Parallel()
	long := func(n string) string { return "repeat('x', " + n + ")" }
	cases := map[string][]badRowCase{
		ledgertables.Native.Name: {
			{"provider over-long", map[string]string{"provider": long("65")}, "provider is longer than 64 characters (65)"},
			{"workflow over-long", map[string]string{"workflow": long("256")}, "workflow is longer than 255 characters (256)"},
			{"action over-long", map[string]string{"action": long("256")}, "action is longer than 255 characters (256)"},
			{"recipient over-long", map[string]string{"recipient": long("321")}, "recipient is longer than 320 characters (321)"},
			{"payload_hash NULL", map[string]string{"payload_hash": "NULL"}, "missing payload_hash"},
		},
		ledgertables.Adopted.Name: {
			{"op_key NULL", map[string]string{"op_key": "NULL"}, "op_key is NULL"},
			{"op_key over-long", map[string]string{"op_key": long("256")}, "op_key is longer than 255 characters (256)"},
			{"provider NULL", map[string]string{"provider": "NULL"}, "provider is NULL"},
			{"action NULL", map[string]string{"action": "NULL"}, "missing action"},
			{"recipient over-long", map[string]string{"recipient": long("321")}, "recipient is longer than 320 characters (321)"},
			{"payload_hash NULL", map[string]string{"payload_hash": "NULL"}, "missing payload_hash"},
			{"payload_hash malformed", map[string]string{"payload_hash": "'not-a-hash'"}, "payload_hash is not 64 lowercase hex characters"},
			{"first_attempt_at NULL", map[string]string{"first_attempt_at": "NULL"}, "first_attempt_at is NULL"},
		},
	}
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		ctx := context.Background()
		b := setupOn(t, lt, baseConfig, nil)
		loosen(t, b)
		before := b.claim(t, "found-before", "sim", time.Hour)
		bad := cases[lt.Name]
		ids := make([]int64, len(bad))
		for i, c := range bad {
			ids[i] = b.insertBad(t, "bad-"+strings.ReplaceAll(c.desc, " ", "-"), c.values)
		}
		after := b.claim(t, "found-after", "sim", time.Hour)
		if !b.table.Native() {
			if err := ledger.InstallGuards(ctx, b.pool, b.table); err != nil {
				t.Fatal(err)
			}
		}

		sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{})
		if err != nil || sum.Errors != 0 {
			t.Fatalf("sweep: %+v, %v", sum, err)
		}
		for _, good := range []ledger.Operation{before, after} {
			if op := b.status(t, good.OpKey); op.Status != ledger.StatusDone {
				t.Errorf("%s: %s, want done in the same sweep", good.OpKey, op.Status)
			}
		}
		tickets := map[int64]bool{}
		for i, c := range bad {
			op, err := b.ledger.GetByID(ctx, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			if op.Status != ledger.StatusReview {
				t.Errorf("%s: %s, want review", c.desc, op.Status)
			}
			tk, ev, ok := b.ticketByID(t, ids[i])
			if !ok {
				t.Errorf("%s: no ticket", c.desc)
				continue
			}
			tickets[tk.ID] = true
			if tk.Reason != proof.ReasonInvalidOperation || !strings.Contains(ev.Detail, c.wantDetail) {
				t.Errorf("%s: ticket %s %q, want invalid_operation saying %q", c.desc, tk.Reason, ev.Detail, c.wantDetail)
			}
			if strings.Contains(ev.Detail, "xxx") {
				t.Errorf("%s: the ticket quotes the value: %q", c.desc, ev.Detail)
			}
		}
		if len(tickets) != len(bad) {
			t.Errorf("%d tickets for %d bad rows, want one each", len(tickets), len(bad))
		}
		if again, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil || again.Scanned != 0 || again.Errors != 0 {
			t.Errorf("a second sweep: %+v, %v; want nothing scanned", again, err)
		}
	})
}

// TestNullOpKeyDoesNotStopItsProvider (I9): the daemon's sweep (River) on
// an adopted table where a queued row holds a NULL op_key settles the
// provider's other rows and turns that row into its invalid_operation
// ticket, in one sweep; the sweep job completes.
func TestNullOpKeyDoesNotStopItsProvider(t *testing.T) {
	t.Parallel()
	b := setupOn(t, ledgertables.Adopted, baseConfig, nil)
	loosen(t, b)
	keys := []string{"found-1", "found-2", "found-3"}
	b.claim(t, keys[0], "sim", time.Hour)
	id := b.insertBad(t, "", map[string]string{"op_key": "NULL"})
	for _, k := range keys[1:] {
		b.claim(t, k, "sim", time.Hour)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, keys, 30*time.Second)
	for _, k := range keys {
		if op := b.status(t, k); op.Status != ledger.StatusDone {
			t.Errorf("%s: %s, want done", k, op.Status)
		}
	}
	tk, ev, ok := b.ticketByID(t, id)
	if !ok || tk.Reason != proof.ReasonInvalidOperation || !strings.Contains(ev.Detail, "op_key is NULL") {
		t.Errorf("the NULL-keyed row's ticket: %v %s %q", ok, tk.Reason, ev.Detail)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'sweep' AND state <> 'completed'`); n != 0 {
		t.Errorf("%d sweep jobs not completed", n)
	}
}
