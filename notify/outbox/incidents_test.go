package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestIncidentsTakeATransaction: the moved-to-review count written through
// a transaction is seen inside it and lost with its rollback; one written
// through the pool stays, and its refresh lease is taken once.
func TestIncidentsTakeATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO sweeper.incidents (provider, started_at, waiting)
		VALUES ('acme', now(), 3) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	inTx := outbox.NewIncidents(tx)
	if err := inTx.CountMovedToReview(ctx, "acme", 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	if in, err := inTx.Incident(ctx, id); err != nil || in.MovedToReview != 2 || in.MovedAfter != time.Hour {
		t.Fatalf("inside the transaction: %+v, %v; want 2 moved after 1h", in, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	incidents := outbox.NewIncidents(pool)
	if in, err := incidents.Incident(ctx, id); err != nil || in.MovedToReview != 0 || in.Provider != "acme" || in.Waiting != 3 {
		t.Fatalf("after the rollback: %+v, %v; want nothing moved", in, err)
	}
	if err := incidents.CountMovedToReview(ctx, "acme", 4, time.Hour); err != nil {
		t.Fatal(err)
	}
	if in, err := incidents.Incident(ctx, id); err != nil || in.MovedToReview != 4 {
		t.Fatalf("through the pool: %+v, %v; want 4 moved", in, err)
	}
	ref, ok, err := incidents.RefreshIncident(ctx, id, "d1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first refresh: %v, %v", ok, err)
	}
	if _, ok, err := incidents.RefreshIncident(ctx, id, "d2", time.Minute); err != nil || ok {
		t.Fatalf("second refresh while held: %v, %v; want refused", ok, err)
	}
	ref.Shown = outbox.Shown{Root: "root text"}
	if held, err := incidents.EndRefresh(ctx, ref, false); err != nil || !held {
		t.Fatalf("end refresh: %v, %v", held, err)
	}
	if _, err := incidents.Incident(ctx, id+1000); err == nil {
		t.Error("a missing incident was read")
	}
}
