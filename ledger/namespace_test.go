package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// claimIn claims a pending operation key of block provider, with
// attempt's recipient and payload.
func claimIn(t *testing.T, db ledger.DB, provider, key string) ledger.Operation {
	t.Helper()
	a := attempt(key)
	a.Provider = provider
	c, err := ledger.NewStore(db, ledger.Native()).Claim(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return c.Operation
}

// setNamespaces records namespaces, failing the test on an error.
func setNamespaces(t *testing.T, db ledger.DB, namespaces map[string]string) {
	t.Helper()
	if _, err := ledger.NewStore(db, ledger.Native()).SetRecordNamespaces(context.Background(), namespaces); err != nil {
		t.Fatal(err)
	}
}

// TestOneRecordOneOperationPerAccount: two blocks reaching one account
// (sms and sms_alerts, one Twilio AccountSid) hold a record to one
// operation among all their rows — HolderOf, HoldersOf, Confirm, MoveToDone
// and a workflow's own UPDATE alike — while a block of another account, and
// a block that is its own namespace, may name the same id for an operation
// of their own.
func TestOneRecordOneOperationPerAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	store := ledger.NewStore(tx, ledger.Native())
	setNamespaces(t, tx, map[string]string{"sms": "twilio:AC1", "sms_alerts": "twilio:AC1", "sms_eu": "twilio:AC2", "mailer": "mailer"})
	held := claimIn(t, tx, "sms", "ns-held")
	other := claimIn(t, tx, "sms_alerts", "ns-other")
	raw := claimIn(t, tx, "sms_alerts", "ns-raw")
	elsewhere := claimIn(t, tx, "sms_eu", "ns-elsewhere")
	own := claimIn(t, tx, "mailer", "ns-own")
	if _, err := store.Confirm(ctx, held.OpKey, "SM1"); err != nil {
		t.Fatal(err)
	}

	if got, err := store.HolderOf(ctx, "sms_alerts", "SM1", other.ID); err != nil || got != held.OpKey {
		t.Errorf("HolderOf(sms_alerts, SM1) = %q, %v; want %s (block sms, one account)", got, err, held.OpKey)
	}
	holders, err := store.HoldersOf(ctx, "sms_alerts", []string{"SM1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ledger.Holder{{RecordID: "SM1", OperationID: held.ID, OpKey: held.OpKey}}, holders); diff != "" {
		t.Errorf("HoldersOf(sms_alerts) (-want +got):\n%s", diff)
	}
	for _, block := range []string{"sms_eu", "mailer"} {
		if got, err := store.HolderOf(ctx, block, "SM1", 0); err != nil || got != "" {
			t.Errorf("HolderOf(%s, SM1) = %q, %v; want none: another namespace", block, got, err)
		}
	}

	var heldErr *ledger.RecordHeldError
	if _, err := store.Confirm(ctx, other.OpKey, "SM1"); !errors.As(err, &heldErr) || heldErr.Holder != held.OpKey {
		t.Errorf("Confirm(sms_alerts, SM1) = %v; want a *RecordHeldError naming %s", err, held.OpKey)
	}
	moved, err := ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, []ledger.DoneItem{ledger.DoneItemOf(other, "SM1")})
	if err != nil || moved[0] {
		t.Errorf("MoveToDone(sms_alerts, SM1) = %v, %v; want not moved", moved, err)
	}

	// A workflow writing done by hand is refused by the database.
	if _, err := tx.Exec(ctx, `SAVEPOINT raw`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, `UPDATE ledger.operations SET status = 'done', provider_record_id = 'SM1' WHERE id = $1`, raw.ID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "operations_record_namespace" {
		t.Errorf("a workflow's UPDATE taking SM1 for sms_alerts: %v; want refused by operations_record_namespace", err)
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT raw`); err != nil {
		t.Fatal(err)
	}

	// Other namespaces: the same id is another record.
	if _, err := store.Confirm(ctx, elsewhere.OpKey, "SM1"); err != nil {
		t.Errorf("Confirm(sms_eu, SM1): %v; want done: another account", err)
	}
	if moved, err := ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, []ledger.DoneItem{ledger.DoneItemOf(own, "SM1")}); err != nil || !moved[0] {
		t.Errorf("MoveToDone(mailer, SM1) = %v, %v; want moved: its own namespace", moved, err)
	}
}

// TestMoveToDoneOneRecordTwoBlocks: of two items of one call, in two blocks
// of one namespace, claiming one record, one moves its row.
func TestMoveToDoneOneRecordTwoBlocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	setNamespaces(t, tx, map[string]string{"sms": "twilio:AC1", "sms_alerts": "twilio:AC1"})
	a := claimIn(t, tx, "sms", "two-a")
	b := claimIn(t, tx, "sms_alerts", "two-b")
	moved, err := ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, []ledger.DoneItem{ledger.DoneItemOf(a, "SM1"), ledger.DoneItemOf(b, "SM1")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{true, false}, moved); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
}

// TestHTTPNamespaces: two blocks with no namespace recorded are two
// namespaces (one record id proves one operation in each); given one
// shared namespace, they are one.
func TestHTTPNamespaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc       string
		namespaces map[string]string
		wantSecond bool
	}{
		{desc: "each block its own", namespaces: map[string]string{"billing": "billing", "invoices": "invoices"}, wantSecond: true},
		{desc: "a shared record_namespace", namespaces: map[string]string{"billing": "http:erp", "invoices": "http:erp"}, wantSecond: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			setNamespaces(t, tx, tc.namespaces)
			a := claimIn(t, tx, "billing", "h-a")
			b := claimIn(t, tx, "invoices", "h-b")
			moved, err := ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, []ledger.DoneItem{ledger.DoneItemOf(a, "inv_1")})
			if err != nil || !moved[0] {
				t.Fatalf("first = %v, %v; want moved", moved, err)
			}
			moved, err = ledger.NewStore(tx, ledger.Native()).MoveToDone(ctx, []ledger.DoneItem{ledger.DoneItemOf(b, "inv_1")})
			if err != nil || moved[0] != tc.wantSecond {
				t.Errorf("second = %v, %v; want moved %v", moved, err, tc.wantSecond)
			}
		})
	}
}

// TestLookalikesAcrossBlocks: an unsettled operation of another block of
// the namespace, with the same recipient and payload, is a candidate
// owner; one of a block of another account is not.
func TestLookalikesAcrossBlocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	store := ledger.NewStore(tx, ledger.Native())
	setNamespaces(t, tx, map[string]string{"sms": "twilio:AC1", "sms_alerts": "twilio:AC1", "sms_eu": "twilio:AC2"})
	asking := claimIn(t, tx, "sms", "look-asking")
	twin := claimIn(t, tx, "sms_alerts", "look-twin")
	claimIn(t, tx, "sms_eu", "look-elsewhere")
	got, err := store.Lookalikes(ctx, "sms", asking.PayloadHash, asking.ID, asking.FirstAttemptAt, time.Minute, 10*time.Minute, asking.Recipient, false)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, op := range got {
		keys = append(keys, op.OpKey)
	}
	if diff := cmp.Diff([]string{twin.OpKey}, keys); diff != "" {
		t.Errorf("look-alikes (-want +got):\n%s", diff)
	}
}

// TestSetRecordNamespaces: what changed is reported, a block back to its
// own namespace loses its entry, and a namespace that could read as a
// block's name is refused.
func TestSetRecordNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	store := ledger.NewStore(tx, ledger.Native())
	changes, err := store.SetRecordNamespaces(ctx, map[string]string{"sms": "twilio:AC1", "pay": "stripe:acct_1", "web": "web"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.NamespaceChange{{Provider: "pay", To: "stripe:acct_1"}, {Provider: "sms", To: "twilio:AC1"}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("first changes (-want +got):\n%s", diff)
	}
	changes, err = store.SetRecordNamespaces(ctx, map[string]string{"sms": "twilio:AC2", "pay": "pay", "web": "web"})
	if err != nil {
		t.Fatal(err)
	}
	want = []ledger.NamespaceChange{{Provider: "pay", From: "stripe:acct_1"}, {Provider: "sms", From: "twilio:AC1", To: "twilio:AC2"}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("second changes (-want +got):\n%s", diff)
	}
	for block, want := range map[string]string{"sms": "twilio:AC2", "pay": "pay", "other": "other"} {
		if got, err := store.RecordNamespace(ctx, block); err != nil || got != want {
			t.Errorf("RecordNamespace(%s) = %q, %v; want %q", block, got, err, want)
		}
	}
	for _, bad := range []string{"sms_alerts", ":AC1", ""} {
		if _, err := store.SetRecordNamespaces(ctx, map[string]string{"sms": bad}); err == nil {
			t.Errorf("namespace %q accepted", bad)
		}
	}
}

// TestRecordNamespaceTriggerWaitsForTheHolder: a workflow's write taking a
// record another block of the namespace is taking in a transaction not yet
// committed waits for it, and is refused once it commits — the database
// holds the rule across blocks whoever writes, not only sweeper.
func TestRecordNamespaceTriggerWaitsForTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	setNamespaces(t, pool, map[string]string{"sms": "twilio:AC1", "sms_alerts": "twilio:AC1"})
	a := claimIn(t, pool, "sms", "w-a")
	b := claimIn(t, pool, "sms_alerts", "w-b")
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	if _, err := first.Exec(ctx, `UPDATE ledger.operations SET status = 'done', provider_record_id = 'SM1' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := pool.Exec(ctx, `UPDATE ledger.operations SET status = 'done', provider_record_id = 'SM1' WHERE id = $1`, b.ID)
		done <- err
	}()
	testwait.Until(t, 10*time.Second, "the second write waits on the record's lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n)
		return err == nil && n == 1
	})
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !errors.Is(mapped(err), ledger.ErrRecordHeld) {
		t.Errorf("second write: %v; want refused, the record proves %s", err, a.OpKey)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ledger.operations WHERE provider_record_id = 'SM1'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("rows naming SM1: %d, %v; want 1", n, err)
	}
}

// mapped reads a raw statement's refusal as the ledger's error would.
func mapped(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.ConstraintName == "operations_record_namespace" {
		return ledger.ErrRecordHeld
	}
	return err
}
