package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestGroupsTakeATransaction: a ticket's place among a group's detailed
// alerts taken in a transaction is lost with its rollback; through the
// pool, the limit holds, and an edit taken and given back may be taken
// again at once, but not twice in one interval.
func TestGroupsTakeATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO sweeper.alert_groups (channel, provider, reason)
		VALUES ('C1', 'acme', 'not_found') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if ok, err := outbox.NewGroups(tx).TakeDetail(ctx, id, 7, 1); err != nil || !ok {
		t.Fatalf("detail in a transaction: %v, %v", ok, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	groups := outbox.NewGroups(pool)
	if g, err := groups.Group(ctx, id); err != nil || g.Detailed != 0 || g.Provider != "acme" || g.Reason != "not_found" {
		t.Fatalf("after the rollback: %+v, %v; want none detailed", g, err)
	}
	if ch, err := groups.GroupChannel(ctx, id); err != nil || ch != "C1" {
		t.Fatalf("channel %q, %v", ch, err)
	}
	for _, tc := range []struct {
		ticket int64
		want   bool
	}{{7, true}, {7, true}, {8, false}} {
		if ok, err := groups.TakeDetail(ctx, id, tc.ticket, 1); err != nil || ok != tc.want {
			t.Errorf("detail for ticket %d: %v, %v; want %v", tc.ticket, ok, err, tc.want)
		}
	}
	edit, ok, err := groups.TakeGroupEdit(ctx, id, time.Hour)
	if err != nil || !ok {
		t.Fatalf("first edit: %v, %v", ok, err)
	}
	if _, ok, err := groups.TakeGroupEdit(ctx, id, time.Hour); err != nil || ok {
		t.Fatalf("second edit within the interval: %v, %v; want refused", ok, err)
	}
	if err := groups.GiveBackGroupEdit(ctx, edit); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := groups.TakeGroupEdit(ctx, id, time.Hour); err != nil || !ok {
		t.Errorf("edit after giving one back: %v, %v; want taken", ok, err)
	}
	if _, err := groups.Group(ctx, id+1000); !errors.Is(err, outbox.ErrGroupNotFound) {
		t.Errorf("a missing group: %v, want ErrGroupNotFound", err)
	}
}
