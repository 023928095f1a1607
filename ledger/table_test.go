package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// TestMapRefuses: every mapping that cannot be a table sweeper reads is
// refused, naming the key; nothing odd reaches SQL.
func TestMapRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		m    ledger.Mapping
		want string
	}{
		{"no schema", ledger.Mapping{Table: "outbound_log"}, "ledger.table: \"outbound_log\" must be schema.table"},
		{"two dots", ledger.Mapping{Table: "a.b.c"}, "must be schema.table"},
		{"injection in the table", ledger.Mapping{Table: `public.log"; DROP TABLE x; --`}, "ledger.table"},
		{"injection in a column", ledger.Mapping{Table: "public.log", Columns: map[string]string{"op_key": `idem_key" = '' OR "x`}},
			`ledger.columns.op_key: "idem_key\" = '' OR \"x": holds " or ;`},
		{"semicolon", ledger.Mapping{Table: "public.log", Columns: map[string]string{"status": "state;"}}, "ledger.columns.status"},
		{"control character", ledger.Mapping{Table: "public.log", Columns: map[string]string{"status": "st\x1bate"}}, "control character"},
		{"too long", ledger.Mapping{Table: "public.log", Columns: map[string]string{"status": strings.Repeat("s", 64)}}, "63 bytes"},
		{"unknown column", ledger.Mapping{Table: "public.log", Columns: map[string]string{"colour": "c"}}, "ledger.columns.colour: sweeper has no column"},
		{"required absent", ledger.Mapping{Table: "public.log", Columns: map[string]string{"payload_hash": ""}}, "ledger.columns.payload_hash: required"},
		{"one column twice", ledger.Mapping{Table: "public.log", Columns: map[string]string{"op_key": "k", "source_id": "k"}}, "is already the column of"},
		{"unknown status", ledger.Mapping{Table: "public.log", Statuses: map[ledger.Status]string{"sent": "x"}}, "ledger.status_values.sent"},
		{"one word twice", ledger.Mapping{Table: "public.log", Statuses: map[ledger.Status]string{"pending": "q", "review": "q"}}, "is already the word for"},
		{"quote in a word", ledger.Mapping{Table: "public.log", Statuses: map[ledger.Status]string{"done": "it's"}}, "ledger.status_values.done"},
		{"pending absent", ledger.Mapping{Table: "public.log", Statuses: map[ledger.Status]string{"pending": ""}}, "only failed may be absent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ledger.Map(c.m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Map: %v, want an error holding %q", err, c.want)
			}
		})
	}
}

// TestNativeStatementsAreTheContract: the zero mapping renders the
// statements ledger.operations' indexes were made for, word for word.
func TestNativeStatementsAreTheContract(t *testing.T) {
	n := ledger.Native()
	if !n.Native() || n.Name() != "ledger.operations" {
		t.Fatalf("native table: %s", n.Name())
	}
	const stale = `SELECT id, op_key, workflow, provider, action, source_id, recipient, payload_hash, payload, status, attempts, first_attempt_at, last_attempt_at, provider_record_id, created_at, updated_at
	FROM ledger.operations
	WHERE status = 'pending' AND provider = $1 AND first_attempt_at < $2
	  AND (first_attempt_at, id) > ($3, $4)
	ORDER BY first_attempt_at, id
	LIMIT $5`
	if got := n.StalePendingQuery(); got != stale {
		t.Errorf("stale scan on ledger.operations:\n%s\nwant\n%s", got, stale)
	}
	if got := n.OperationsSQL(); got != `(SELECT id, provider, status, created_at FROM ledger.operations)` {
		t.Errorf("OperationsSQL: %s", got)
	}
}

// TestMapQuotesEveryName: mixed case, a space and a reserved word are
// names like any other, quoted; absent columns read as [ledger.Absence]
// says.
func TestMapQuotesEveryName(t *testing.T) {
	tbl, err := ledger.Map(ledger.Mapping{
		Table:    "Shop Data.outbound log",
		Columns:  map[string]string{"op_key": "IdemKey", "status": "order", "workflow": "", "provider": "select"},
		Statuses: map[ledger.Status]string{"pending": "queued", "failed": ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	q := tbl.StalePendingQuery()
	for _, want := range []string{`FROM "Shop Data"."outbound log"`, `"order" = 'queued'`, `"select" = $1`, `"IdemKey"::text`, `'outbound log'::text`} {
		if !strings.Contains(q, want) {
			t.Errorf("stale scan lacks %s:\n%s", want, q)
		}
	}
	if _, ok := tbl.Word(ledger.StatusFailed); ok {
		t.Error("failed has a word")
	}
}

func adopted(t *testing.T) (*pgxpool.Pool, *ledger.Table) {
	t.Helper()
	pool := dbtest.NewPool(t)
	return pool, ledgertables.Adopted.Create(t, pool)
}

// TestAdoptedTableStore: the store's reads and writes on a table with
// other names, other words, an integer key and columns of its own.
func TestAdoptedTableStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, tbl := adopted(t)
	store := tbl.Store(pool)
	hash := strings.Repeat("a", 64)
	var keys []string
	for i, to := range []string{"+15550001", "+15550002", "+15550003"} {
		c, err := store.Claim(ctx, ledger.Attempt{OpKey: "k" + to, Workflow: "ignored", Provider: "sms", Action: "send", Recipient: to, PayloadHash: hash})
		if err != nil || !c.Owned {
			t.Fatalf("claim %d: %+v %v", i, c, err)
		}
		if c.Operation.Status != ledger.StatusPending || c.Operation.Workflow != "Outbound Log" || c.Operation.Recipient != to {
			t.Fatalf("claimed row read back as %+v", c.Operation)
		}
		keys = append(keys, c.Operation.OpKey)
	}
	// The workflow's own words: the row is queued.
	var word string
	if err := pool.QueryRow(ctx, `SELECT "order" FROM public."Outbound Log" WHERE "IdemKey" = $1`, keys[0]).Scan(&word); err != nil || word != "queued" {
		t.Fatalf("status word %q, %v", word, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE public."Outbound Log" SET first_try = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	stale, err := store.StalePending(ctx, "sms", time.Now().Add(-time.Minute), ledger.StaleCursor{}, 10)
	if err != nil || len(stale) != 3 {
		t.Fatalf("stale scan: %d rows, %v", len(stale), err)
	}
	if n, err := store.CountStalePending(ctx, "sms", time.Now().Add(-time.Minute)); err != nil || n != 3 {
		t.Fatalf("count stale: %d %v", n, err)
	}
	// Two items claim one record: one wins.
	moved, err := store.MoveToDone(ctx, []ledger.DoneItem{ledger.DoneItemOf(stale[0], "SM1"), ledger.DoneItemOf(stale[1], "SM1")})
	if err != nil || !moved[0] || moved[1] {
		t.Fatalf("move to done: %v %v", moved, err)
	}
	if err := pool.QueryRow(ctx, `SELECT "order" FROM public."Outbound Log" WHERE pk = $1`, stale[0].ID).Scan(&word); err != nil || word != "sent" {
		t.Fatalf("done row's word %q, %v", word, err)
	}
	if holder, err := store.HolderOf(ctx, "sms", "SM1", stale[1].ID); err != nil || holder != stale[0].OpKey {
		t.Fatalf("holder of SM1: %q %v", holder, err)
	}
	if _, err := store.Confirm(ctx, stale[1].OpKey, "SM1"); !errors.Is(err, ledger.ErrRecordHeld) {
		t.Fatalf("confirm a held record: %v", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inReview, err := tbl.Store(tx).MoveToReview(ctx, []int64{stale[1].ID, stale[0].ID})
	if err != nil || len(inReview) != 1 || inReview[0] != stale[1].ID {
		t.Fatalf("move to review: %v %v", inReview, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetByID(ctx, stale[1].ID)
	if err != nil || got.Status != ledger.StatusReview {
		t.Fatalf("review row: %+v %v", got, err)
	}
	// A table with no word for failed: a person's "not sent" cannot be
	// written, and says why.
	m := ledgertables.Adopted.Mapping(t)
	m.Statuses = map[ledger.Status]string{"pending": "queued", "done": "sent", "review": "check", "failed": ""}
	noFailed, err := ledger.Map(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noFailed.Store(pool).CompareAndSet(ctx, got.ID, ledger.StatusReview, ledger.StatusFailed, ""); !errors.Is(err, ledger.ErrNoWord) {
		t.Fatalf("review → failed without a word: %v", err)
	}
	if ok, err := store.CompareAndSet(ctx, got.ID, ledger.StatusReview, ledger.StatusDone, "SM2"); err != nil || !ok {
		t.Fatalf("review → done: %v %v", ok, err)
	}
	look, err := store.Lookalikes(ctx, "sms", hash, stale[0].ID, time.Now().Add(-time.Hour), time.Hour, time.Hour, "+15550003", true)
	if err != nil || len(look) != 1 || look[0].Recipient != "+15550003" {
		t.Fatalf("look-alikes: %+v %v", look, err)
	}
	st, err := store.Stats(ctx, []string{"sms"}, "other")
	if err != nil || len(st.Operations) != 1 || st.Operations[0].Count != 1 || st.Operations[0].Status != ledger.StatusPending {
		t.Fatalf("stats: %+v %v", st, err)
	}
	settled, pending, err := store.Backlog(ctx, "sms", time.Now().Add(-2*time.Hour), time.Time{})
	if err != nil || settled != 2 || pending != 1 {
		t.Fatalf("backlog: settled %d pending %d, %v", settled, pending, err)
	}
	// A row in a word the mapping does not name is no operation sweeper
	// settles: it is not pending.
	if _, err := pool.Exec(ctx, `INSERT INTO public."Outbound Log" ("IdemKey", channel, kind, body_sha256, "order", first_try)
		VALUES ('odd', 'sms', 'send', $1, 'paused', now() - interval '1 hour')`, hash); err != nil {
		t.Fatal(err)
	}
	odd, err := store.Get(ctx, "odd")
	if err != nil || odd.Status.Valid() {
		t.Fatalf("odd row: %+v %v", odd, err)
	}
	if n, _ := store.CountPending(ctx, "sms"); n != 1 {
		t.Fatalf("pending: %d", n)
	}
}
