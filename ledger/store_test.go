package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

var allStatuses = []ledger.Status{ledger.StatusPending, ledger.StatusDone, ledger.StatusReview, ledger.StatusFailed}

// legal is I2 of docs/architecture.md, written out independently of ledger.CanTransition.
var legal = map[[2]ledger.Status]bool{
	{"pending", "done"}: true, {"pending", "review"}: true, {"pending", "failed"}: true,
	{"review", "done"}: true, {"review", "failed"}: true,
}

func TestCanTransition(t *testing.T) {
	t.Parallel()
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			if got, want := ledger.CanTransition(from, to), legal[[2]ledger.Status{from, to}]; got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

func attempt(key string) ledger.Attempt {
	return ledger.Attempt{
		OpKey:     key,
		Workflow:  "welcome-email",
		Provider:  "mailer",
		Action:    "send_email",
		Recipient: "a@example.com",
		Payload:   json.RawMessage(`{"template":"welcome","to":"a@example.com"}`),
	}
}

// insertWithStatus writes a row in the given state with raw SQL, in the
// shape the ledger allows: a done row with a record (rec-KEY unless given),
// a row in review as sweeper writes it (declared, the declaration withdrawn
// after, so that the rest of the transaction is any writer).
func insertWithStatus(t *testing.T, db ledger.DB, key string, status ledger.Status, recordID string) {
	t.Helper()
	ctx := context.Background()
	if status == ledger.StatusDone && recordID == "" {
		recordID = "rec-" + key
	}
	if status == ledger.StatusReview {
		if err := ledger.DeclareSweeperWriter(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	_, err := db.Exec(ctx, `
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, provider_record_id)
		VALUES ($1, 'wf', 'mailer', 'send_email', repeat('a', 64), $2, nullif($3, ''))`, key, status, recordID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `SELECT set_config('sweeper.writer', '', true)`); err != nil {
		t.Fatal(err)
	}
}

// TestTriggerTransitions tries every status change with plain SQL, bypassing
// the Go store: only the forward moves of docs/architecture.md may succeed (I2).
func TestTriggerTransitions(t *testing.T) {
	t.Parallel()
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			if from == to {
				continue
			}
			t.Run(fmt.Sprintf("%s to %s", from, to), func(t *testing.T) {
				t.Parallel()
				tx := dbtest.Tx(t)
				ctx := context.Background()
				key := "trg-" + string(from) + "-" + string(to)
				insertWithStatus(t, tx, key, from, "")
				// Every move as sweeper, with a record for done: this is
				// about which moves exist, not who may make them.
				if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
					t.Fatal(err)
				}
				_, err := tx.Exec(ctx, `UPDATE ledger.operations SET status = $2,
					provider_record_id = CASE WHEN $2 = 'done' THEN coalesce(provider_record_id, 'rec-' || op_key)
					                          ELSE provider_record_id END
					WHERE op_key = $1`, key, to)
				if legal[[2]ledger.Status{from, to}] {
					if err != nil {
						t.Fatalf("legal transition rejected: %v", err)
					}
					return
				}
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) {
					t.Fatalf("illegal transition %s -> %s accepted (err = %v)", from, to, err)
				}
				if pgErr.Code != "23514" || pgErr.ConstraintName != "operations_status_transition" {
					t.Errorf("error code %s constraint %q, want 23514 operations_status_transition", pgErr.Code, pgErr.ConstraintName)
				}
				want := fmt.Sprintf("ledger.operations %s: illegal status transition %s -> %s", key, from, to)
				if pgErr.Message != want {
					t.Errorf("message %q, want %q", pgErr.Message, want)
				}
			})
		}
	}
}

func TestTriggerProviderRecordIDIsFinal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		set     string // SQL expression
		wantErr bool
	}{
		{desc: "same value", set: "'rec_1'"},
		{desc: "another value", set: "'rec_2'", wantErr: true},
		{desc: "cleared", set: "NULL", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			tx := dbtest.Tx(t)
			insertWithStatus(t, tx, "rec-final", ledger.StatusDone, "rec_1")
			_, err := tx.Exec(context.Background(), `UPDATE ledger.operations SET provider_record_id = `+tc.set+` WHERE op_key = 'rec-final'`)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "rec-final: provider_record_id cannot change once set") {
				t.Errorf("message %q does not name the op_key and the rule", err)
			}
		})
	}
}

func TestTriggerOpKeyIsFinal(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	insertWithStatus(t, tx, "key-final", ledger.StatusPending, "")
	_, err := tx.Exec(context.Background(), `UPDATE ledger.operations SET op_key = 'other' WHERE op_key = 'key-final'`)
	if err == nil || !strings.Contains(err.Error(), "op_key cannot change") {
		t.Fatalf("renaming op_key: err = %v, want rejection", err)
	}
}

func TestTableConstraints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, sql, constraint string
	}{
		{"empty op_key", `INSERT INTO ledger.operations (op_key, workflow, provider, action) VALUES ('', 'w', 'p', 'a')`, "operations_op_key_check"},
		{"op_key over 255", `INSERT INTO ledger.operations (op_key, workflow, provider, action) VALUES (repeat('k', 256), 'w', 'p', 'a')`, "operations_op_key_check"},
		{"unknown status", `INSERT INTO ledger.operations (op_key, workflow, provider, action, status) VALUES ('k', 'w', 'p', 'a', 'sent')`, "operations_status_check"},
		{"uppercase hash", `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash) VALUES ('k', 'w', 'p', 'a', repeat('A', 64))`, "operations_payload_hash_check"},
		{"empty provider", `INSERT INTO ledger.operations (op_key, workflow, provider, action) VALUES ('k', 'w', '', 'a')`, "operations_provider_check"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			_, err := dbtest.Tx(t).Exec(context.Background(), tc.sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.ConstraintName != tc.constraint {
				t.Fatalf("err = %v, want violation of %s", err, tc.constraint)
			}
		})
	}
	t.Run("255 characters is allowed", func(t *testing.T) {
		t.Parallel()
		_, err := dbtest.Tx(t).Exec(context.Background(),
			`INSERT INTO ledger.operations (op_key, workflow, provider, action) VALUES (repeat('é', 255), 'w', 'p', 'a')`)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("first claim owns the attempt", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		claim, err := store.Claim(ctx, attempt("c-1"))
		if err != nil {
			t.Fatal(err)
		}
		if !claim.Owned {
			t.Fatal("first claim not owned")
		}
		op := claim.Operation
		want, _ := ledger.PayloadHash([]byte(`{"template":"welcome","to":"a@example.com"}`))
		if op.Status != ledger.StatusPending || op.PayloadHash != want || op.Attempts != 1 || op.FirstAttemptAt.IsZero() || op.LastAttemptAt.IsZero() {
			t.Errorf("claimed row = %+v", op)
		}
		var payload map[string]string
		if err := json.Unmarshal(op.Payload, &payload); err != nil || payload["template"] != "welcome" {
			t.Errorf("payload = %s (%v)", op.Payload, err)
		}
	})

	t.Run("same key, same content: not owned, existing row returned", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		first, err := store.Claim(ctx, attempt("c-2"))
		if err != nil {
			t.Fatal(err)
		}
		second, err := store.Claim(ctx, attempt("c-2"))
		if err != nil {
			t.Fatal(err)
		}
		if second.Owned {
			t.Fatal("second claim owned")
		}
		if diff := cmp.Diff(first.Operation, second.Operation); diff != "" {
			t.Errorf("existing row (-first +second):\n%s", diff)
		}
	})

	t.Run("same key, different payload: conflict", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		if _, err := store.Claim(ctx, attempt("c-3")); err != nil {
			t.Fatal(err)
		}
		other := attempt("c-3")
		other.Payload = json.RawMessage(`{"template":"goodbye","to":"a@example.com"}`)
		_, err := store.Claim(ctx, other)
		var conflict *ledger.ConflictError
		if !errors.As(err, &conflict) || !errors.Is(err, ledger.ErrConflict) {
			t.Fatalf("err = %v, want *ConflictError", err)
		}
		if diff := cmp.Diff([]string{"payload_hash"}, conflict.Fields); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
		op, err := store.Get(ctx, "c-3")
		if err != nil || !strings.Contains(string(op.Payload), "welcome") {
			t.Errorf("original row changed: %+v, %v", op, err)
		}
	})

	t.Run("same key, other recipient and provider: conflict names both", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		if _, err := store.Claim(ctx, attempt("c-4")); err != nil {
			t.Fatal(err)
		}
		other := attempt("c-4")
		other.Recipient, other.Provider = "b@example.com", "sms"
		_, err := store.Claim(ctx, other)
		var conflict *ledger.ConflictError
		if !errors.As(err, &conflict) {
			t.Fatalf("err = %v, want *ConflictError", err)
		}
		if diff := cmp.Diff([]string{"provider", "recipient"}, conflict.Fields); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
	})

	t.Run("invalid attempts are refused before the database", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		for _, tc := range []struct {
			desc   string
			modify func(*ledger.Attempt)
			want   string
		}{
			{"no key", func(a *ledger.Attempt) { a.OpKey = "" }, "op_key: required"},
			{"long key", func(a *ledger.Attempt) { a.OpKey = strings.Repeat("k", 256) }, "op_key: longer than 255 characters"},
			{"no provider", func(a *ledger.Attempt) { a.Provider = "" }, "provider: required"},
			{"bad payload", func(a *ledger.Attempt) { a.Payload = json.RawMessage(`{"a":`) }, "payload: invalid payload"},
			{"hash disagrees", func(a *ledger.Attempt) { a.PayloadHash = strings.Repeat("0", 64) }, "is not the hash of payload"},
			{"no hash, no payload", func(a *ledger.Attempt) { a.Payload = nil }, "payload_hash: required"},
			{"uppercase hash", func(a *ledger.Attempt) { a.Payload, a.PayloadHash = nil, strings.Repeat("A", 64) }, "64 lowercase hex"},
		} {
			a := attempt("invalid")
			tc.modify(&a)
			_, err := store.Claim(ctx, a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want it to contain %q", tc.desc, err, tc.want)
			}
		}
		if _, err := store.Get(ctx, "invalid"); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("an invalid attempt reached the table: %v", err)
		}
	})
}

// TestClaimConcurrent: 20 workflows claim one key at once on separate
// connections; exactly one owns it.
func TestClaimConcurrent(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	store := ledger.NewStore(pool, ledger.Native())
	const n = 20
	for round := range 5 {
		key := fmt.Sprintf("race-%d", round)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			owned = make([]bool, n)
			errs  = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				c, err := store.Claim(context.Background(), attempt(key))
				owned[i], errs[i] = c.Owned, err
			})
		}
		close(start)
		wg.Wait()
		owners := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("claim %d: %v", i, errs[i])
			}
			if owned[i] {
				owners++
			}
		}
		if owners != 1 {
			t.Fatalf("round %d: %d owners, want exactly 1", round, owners)
		}
	}
	var rows int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM ledger.operations`).Scan(&rows); err != nil || rows != 5 {
		t.Fatalf("rows = %d (%v), want 5", rows, err)
	}
}

func TestConfirmAndReject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("confirm pending", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		if _, err := store.Claim(ctx, attempt("cf-1")); err != nil {
			t.Fatal(err)
		}
		op, err := store.Confirm(ctx, "cf-1", "msg_123")
		if err != nil {
			t.Fatal(err)
		}
		if op.Status != ledger.StatusDone || op.ProviderRecordID != "msg_123" {
			t.Errorf("after confirm: %+v", op)
		}
		// Idempotent with the same record id.
		if _, err := store.Confirm(ctx, "cf-1", "msg_123"); err != nil {
			t.Errorf("second confirm with the same id: %v", err)
		}
		// Another id is a state error, and the row keeps its id.
		_, err = store.Confirm(ctx, "cf-1", "msg_999")
		var stateErr *ledger.StateError
		if !errors.As(err, &stateErr) || stateErr.Got != ledger.StatusDone || !errors.Is(err, ledger.ErrNotPending) {
			t.Errorf("confirm with another id: err = %v", err)
		}
		if op, _ := store.Get(ctx, "cf-1"); op.ProviderRecordID != "msg_123" {
			t.Errorf("record id changed to %s", op.ProviderRecordID)
		}
		// A done operation cannot be rejected.
		if _, err := store.Reject(ctx, "cf-1"); !errors.Is(err, ledger.ErrNotPending) {
			t.Errorf("reject done: err = %v", err)
		}
	})

	t.Run("reject pending, then confirm fails", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		if _, err := store.Claim(ctx, attempt("rj-1")); err != nil {
			t.Fatal(err)
		}
		op, err := store.Reject(ctx, "rj-1")
		if err != nil || op.Status != ledger.StatusFailed {
			t.Fatalf("reject: %+v, %v", op, err)
		}
		if _, err := store.Reject(ctx, "rj-1"); err != nil {
			t.Errorf("second reject: %v", err)
		}
		if _, err := store.Confirm(ctx, "rj-1", "msg_1"); !errors.Is(err, ledger.ErrNotPending) {
			t.Errorf("confirm failed: err = %v", err)
		}
	})

	t.Run("confirm under review is not a workflow's move", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.Tx(t)
		insertWithStatus(t, tx, "rv-1", ledger.StatusReview, "")
		_, err := ledger.NewStore(tx, ledger.Native()).Confirm(ctx, "rv-1", "msg_1")
		var stateErr *ledger.StateError
		if !errors.As(err, &stateErr) || stateErr.Got != ledger.StatusReview || stateErr.Want != ledger.StatusPending {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("unknown key", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		if _, err := store.Confirm(ctx, "nope", "msg_1"); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("confirm: %v", err)
		}
		if _, err := store.Reject(ctx, "nope"); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("reject: %v", err)
		}
	})

	t.Run("confirm needs a record id", func(t *testing.T) {
		t.Parallel()
		store := ledger.NewStore(dbtest.Tx(t), ledger.Native())
		if _, err := store.Claim(ctx, attempt("cf-2")); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Confirm(ctx, "cf-2", ""); err == nil {
			t.Error("confirm without record id accepted")
		}
	})
}

func TestStalePendingPagination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	_, err := tx.Exec(ctx, `
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, first_attempt_at,
		                               provider_record_id)
		SELECT 'sp-' || i, 'wf', CASE WHEN i % 5 = 0 THEN 'other' ELSE 'mailer' END, 'send', repeat('a', 64),
		       CASE WHEN i % 7 = 0 THEN 'done' ELSE 'pending' END,
		       now() - interval '1 hour' + (i / 3) * interval '1 second',  -- ties on first_attempt_at
		       CASE WHEN i % 7 = 0 THEN 'rec_' || i END
		FROM generate_series(1, 200) i`)
	if err != nil {
		t.Fatal(err)
	}
	// Fresh rows beyond the cutoff.
	if _, err := tx.Exec(ctx, `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash) VALUES ('fresh', 'wf', 'mailer', 'send', repeat('a', 64))`); err != nil {
		t.Fatal(err)
	}
	var want int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM ledger.operations WHERE status = 'pending' AND provider = 'mailer' AND op_key <> 'fresh'`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	store := ledger.NewStore(tx, ledger.Native())
	seen := map[string]bool{}
	var cursor ledger.StaleCursor
	pages := 0
	for {
		ops, err := store.StalePending(ctx, "mailer", time.Now().Add(-time.Minute), cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, op := range ops {
			if seen[op.OpKey] {
				t.Fatalf("%s returned twice", op.OpKey)
			}
			if op.Status != ledger.StatusPending || op.Provider != "mailer" || op.OpKey == "fresh" {
				t.Fatalf("unexpected row %+v", op)
			}
			seen[op.OpKey] = true
		}
		if len(ops) < 7 {
			break
		}
		last := ops[len(ops)-1]
		cursor = ledger.StaleCursor{FirstAttemptAt: last.FirstAttemptAt, ID: last.ID}
	}
	if len(seen) != want {
		t.Errorf("scan saw %d rows in %d pages, want %d", len(seen), pages, want)
	}
	// The count is of the same rows: mailer's, pending, older than the
	// cutoff (not the fresh one, not done, not other's).
	if n, err := store.CountStalePending(ctx, "mailer", time.Now().Add(-time.Minute)); err != nil || n != want {
		t.Errorf("CountStalePending = %d, %v; want %d", n, err, want)
	}
	if n, err := store.CountStalePending(ctx, "nobody", time.Now()); err != nil || n != 0 {
		t.Errorf("CountStalePending of a provider without rows = %d, %v", n, err)
	}
}

// TestStaleScanUsesIndex: the stale scan reads the partial index, never the
// table, both on a ledger where nearly every row is done and with a large
// backlog — where it must also walk the index in order (no Sort), so a batch
// costs its LIMIT and not the backlog.
func TestStaleScanUsesIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc         string
		pendingEvery int
		wantOrdered  bool
	}{
		{desc: "one row in a thousand pending", pendingEvery: 1000},
		{desc: "one row in four pending", pendingEvery: 4, wantOrdered: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := dbtest.NewPool(t)
			_, err := pool.Exec(ctx, `
				INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, first_attempt_at, provider_record_id)
				SELECT 'ix-' || i, 'wf', 'p' || (i % 3), 'send', repeat('a', 64),
				       CASE WHEN i % $1 = 0 THEN 'pending' ELSE 'done' END,
				       now() - (i % 10000) * interval '1 minute',
				       CASE WHEN i % $1 = 0 THEN NULL ELSE 'rec_' || i END
				FROM generate_series(1, 200000) i`, tc.pendingEvery)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `ANALYZE ledger.operations`); err != nil {
				t.Fatal(err)
			}
			rows, err := pool.Query(ctx, `EXPLAIN `+ledger.Native().StalePendingQuery(), "p0", time.Now().Add(-10*time.Minute), time.Time{}, int64(0), 500)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			plan := strings.Join(lines, "\n")
			if !strings.Contains(plan, "Index Scan using operations_pending_stale_idx") &&
				!strings.Contains(plan, "Bitmap Index Scan on operations_pending_stale_idx") {
				t.Errorf("stale scan does not use the partial index:\n%s", plan)
			}
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("stale scan reads the table:\n%s", plan)
			}
			if tc.wantOrdered && (strings.Contains(plan, "Sort") || !strings.Contains(plan, "Index Scan using operations_pending_stale_idx")) {
				t.Errorf("stale scan sorts the backlog instead of walking the index:\n%s", plan)
			}
		})
	}
}

// TestStalePendingOddTimestamps: rows a workflow wrote with -infinity (before
// the ledger refused it) or a BC timestamp are still scanned (the first page
// starts before them).
func TestStalePendingOddTimestamps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: turning the trigger off locks the table.
	tx, err := dbtest.NewPool(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, `
		ALTER TABLE ledger.operations DISABLE TRIGGER operations_contract;
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at) VALUES
		('odd-inf', 'wf', 'mailer', 'send', repeat('a', 64), '-infinity'),
		('odd-bc', 'wf', 'mailer', 'send', repeat('a', 64), '0100-01-01 00:00:00+00 BC'),
		('odd-normal', 'wf', 'mailer', 'send', repeat('a', 64), now() - interval '1 hour'),
		('odd-future', 'wf', 'other', 'send', repeat('a', 64), now() + interval '1 hour'),
		('odd-end', 'wf', 'mailer', 'send', repeat('a', 64), 'infinity');
		ALTER TABLE ledger.operations ENABLE TRIGGER operations_contract`)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := ledger.NewStore(tx, ledger.Native()).StalePending(ctx, "mailer", time.Now(), ledger.StaleCursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, op := range ops {
		keys = append(keys, op.OpKey)
	}
	if diff := cmp.Diff([]string{"odd-inf", "odd-bc", "odd-normal"}, keys); diff != "" {
		t.Errorf("scanned (-want +got):\n%s", diff)
	}
	// Rows dated in the future never age into that scan: this one finds
	// them, whatever their provider.
	future, err := ledger.NewStore(tx, ledger.Native()).FutureDated(ctx, time.Now().Add(ledger.MaxClockSkew), ledger.StaleCursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	keys = nil
	for _, op := range future {
		keys = append(keys, op.OpKey)
	}
	if diff := cmp.Diff([]string{"odd-future", "odd-end"}, keys); diff != "" {
		t.Errorf("future-dated scan (-want +got):\n%s", diff)
	}
}

// TestConfirmRecordHeld: one provider record proves at most one operation.
// A workflow confirming with a record another operation of the provider
// already holds gets a *RecordHeldError naming that operation, its row stays
// pending, and its transaction stays usable.
func TestConfirmRecordHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		desc          string
		holderKey     string
		holderProv    string
		wantHolder    string
		wantConfirmed bool
	}{
		{desc: "held by another operation of the provider", holderKey: "held-1", holderProv: "mailer", wantHolder: "held-1"},
		{desc: "the same id at another provider", holderKey: "held-2", holderProv: "sms", wantConfirmed: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			// Subtests run side by side in one database: each its own
			// op_keys, or the unique op_key makes them wait on each other.
			second := "second-" + tc.holderKey
			tx := dbtest.Tx(t)
			store := ledger.NewStore(tx, ledger.Native())
			holder := attempt(tc.holderKey)
			holder.Provider = tc.holderProv
			if _, err := store.Claim(ctx, holder); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Confirm(ctx, tc.holderKey, "msg_shared"); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Claim(ctx, attempt(second)); err != nil {
				t.Fatal(err)
			}
			op, err := store.Confirm(ctx, second, "msg_shared")
			if tc.wantConfirmed {
				if err != nil || op.Status != ledger.StatusDone {
					t.Fatalf("Confirm = %+v, %v", op, err)
				}
				return
			}
			var held *ledger.RecordHeldError
			if !errors.As(err, &held) || !errors.Is(err, ledger.ErrRecordHeld) {
				t.Fatalf("Confirm: err = %v, want *RecordHeldError", err)
			}
			want := &ledger.RecordHeldError{OpKey: second, RecordID: "msg_shared", Holder: tc.wantHolder}
			if diff := cmp.Diff(want, held); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), "leave "+second+" pending") {
				t.Errorf("message %q does not say what to do", err)
			}
			if op, err := store.Get(ctx, second); err != nil || op.Status != ledger.StatusPending || op.ProviderRecordID != "" {
				t.Errorf("after the refusal: %+v, %v; want pending without a record", op, err)
			}
		})
	}
}

// TestConfirmRecordHeldConcurrently: two workflows confirm two operations
// with one record at the same moment, on separate connections. The unique
// index decides; the loser's error still names the winner.
func TestConfirmRecordHeldConcurrently(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	store := ledger.NewStore(pool, ledger.Native())
	ctx := context.Background()
	for round := range 5 {
		keys := []string{fmt.Sprintf("race-a-%d", round), fmt.Sprintf("race-b-%d", round)}
		record := fmt.Sprintf("msg_race_%d", round)
		for _, key := range keys {
			if _, err := store.Claim(ctx, attempt(key)); err != nil {
				t.Fatal(err)
			}
		}
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, len(keys))
		)
		for i, key := range keys {
			wg.Go(func() {
				<-start
				_, errs[i] = store.Confirm(ctx, key, record)
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for i, err := range errs {
			var held *ledger.RecordHeldError
			switch {
			case err == nil:
				winners++
			case errors.As(err, &held):
				if held.Holder != keys[1-i] || held.OpKey != keys[i] {
					t.Errorf("round %d: %+v; want %s held by %s", round, held, keys[i], keys[1-i])
				}
			default:
				t.Errorf("round %d: Confirm %s: %v", round, keys[i], err)
			}
		}
		if winners != 1 {
			t.Errorf("round %d: %d confirmations of one record, want 1", round, winners)
		}
	}
}

// TestCompareAndSetRecordHeld: sweeper checks the holder before it writes;
// should another operation take the record in between, the unique index
// refuses the write and the error says so.
func TestCompareAndSetRecordHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	insertWithStatus(t, tx, "cas-holder", ledger.StatusDone, "msg_cas")
	insertWithStatus(t, tx, "cas-second", ledger.StatusPending, "")
	op, err := ledger.NewStore(tx, ledger.Native()).Get(ctx, "cas-second")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ledger.NewStore(tx, ledger.Native()).CompareAndSet(ctx, op.ID, ledger.StatusPending, ledger.StatusDone, "msg_cas")
	if !errors.Is(err, ledger.ErrRecordHeld) || !strings.Contains(err.Error(), "msg_cas") {
		t.Errorf("err = %v, want ErrRecordHeld naming the record", err)
	}
}

// TestStoreMapsGuards: the ledger's refusals reach a store's caller as the
// package's errors, with the database's explanation.
func TestStoreMapsGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		desc    string
		from    ledger.Status
		to      ledger.Status
		record  string
		want    error
		message string
	}{
		{desc: "pending to review without declaring sweeper", from: ledger.StatusPending, to: ledger.StatusReview,
			want: ledger.ErrIllegalTransition, message: "leave the row pending"},
		{desc: "review to done without a record", from: ledger.StatusReview, to: ledger.StatusDone,
			want: ledger.ErrIllegalTransition, message: "done requires provider_record_id"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			tx := dbtest.Tx(t)
			insertWithStatus(t, tx, "map", tc.from, "")
			store := ledger.NewStore(tx, ledger.Native())
			op, err := store.Get(ctx, "map")
			if err != nil {
				t.Fatal(err)
			}
			_, err = store.CompareAndSet(ctx, op.ID, tc.from, tc.to, tc.record)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("err = %v, want %v containing %q", err, tc.want, tc.message)
			}
		})
	}
}

// TestHoldersOf: one query answers what HolderOf answers record by record —
// another operation of the provider that names the record, none for a
// record held only by an excepted operation or by another provider.
func TestHoldersOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	store := ledger.NewStore(tx, ledger.Native())
	insertWithStatus(t, tx, "h-held", ledger.StatusDone, "msg_held")
	insertWithStatus(t, tx, "h-self", ledger.StatusDone, "msg_self")
	insertWithStatus(t, tx, "h-asking", ledger.StatusPending, "")
	other := attempt("h-other-provider")
	other.Provider = "sms"
	if _, err := store.Claim(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Confirm(ctx, other.OpKey, "msg_elsewhere"); err != nil {
		t.Fatal(err)
	}
	self, err := store.Get(ctx, "h-self")
	if err != nil {
		t.Fatal(err)
	}
	asking, err := store.Get(ctx, "h-asking")
	if err != nil {
		t.Fatal(err)
	}
	held, err := store.Get(ctx, "h-held")
	if err != nil {
		t.Fatal(err)
	}
	records := []string{"msg_held", "msg_self", "msg_elsewhere", "msg_nobody"}
	got, err := store.HoldersOf(ctx, "mailer", records)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.Holder{
		{RecordID: "msg_held", OperationID: held.ID, OpKey: "h-held"},
		{RecordID: "msg_self", OperationID: self.ID, OpKey: "h-self"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("holders (-want +got):\n%s", diff)
	}
	for _, asker := range []ledger.Operation{self, asking} {
		for _, rec := range records {
			one, err := store.HolderOf(ctx, "mailer", rec, asker.ID)
			batch := ""
			for _, h := range got {
				if h.RecordID == rec && h.OperationID != asker.ID {
					batch = h.OpKey
				}
			}
			if err != nil || one != batch {
				t.Errorf("HolderOf(%s) for %s = %q, %v; HoldersOf says %q", rec, asker.OpKey, one, err, batch)
			}
		}
	}
	ops, err := store.GetByIDs(ctx, []int64{self.ID, asking.ID, -1})
	if err != nil || len(ops) != 2 {
		t.Fatalf("GetByIDs = %d operations, %v; want the two that exist", len(ops), err)
	}
}
