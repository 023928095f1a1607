package outbox_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// openTicket opens a not_found ticket for an operation of workflow and
// provider, as a lookup does, and returns its id.
func openTicket(t *testing.T, pool *pgxpool.Pool, key, workflow, provider string) int64 {
	t.Helper()
	ctx := context.Background()
	c, err := ledger.NewStore(pool, ledger.Native()).Claim(ctx, ledger.Attempt{OpKey: key, Workflow: workflow, Provider: provider, Action: "send",
		Recipient: "a@example.com", Payload: json.RawMessage(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := proof.Decide(c.Operation, proof.Answered(proof.SearchFor(c.Operation, providers.Matching{ByKey: true}, now), nil))
	ev := proof.NewEvidence(c.Operation, proof.LookupReport{Adapter: "sim", Outcome: proof.Answered(providers.Query{}, nil), At: now}, d)
	applied, err := review.NewStore(pool, ledger.Native(), review.Policy{DefaultOwner: "U0OWNER", Window: time.Hour, Priority: "normal"}).Apply(ctx, c.Operation, d, ev, now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("open: %+v, %v", applied, err)
	}
	return applied.TicketID
}

// receivers lists the receivers of ticket id's rows of event kind.
func receivers(t *testing.T, pool *pgxpool.Pool, id int64, kind string) []string {
	t.Helper()
	rows, err := outbox.NewStore(pool).List(context.Background(), outbox.Filter{TicketID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range rows {
		if n.Kind == kind {
			out = append(out, n.Receiver)
		}
	}
	slices.Sort(out)
	return out
}

// TestRoutesChooseReceivers: with no routes every event is Slack's alone;
// routes match by provider, workflow, reason and level, each matching
// route adds its receiver once; SetRoutes replaces the list and reports a
// change only when there is one.
func TestRoutesChooseReceivers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	store := outbox.NewRoutes(pool)

	plain := openTicket(t, pool, "k0", "payments", "stripe")
	if got := receivers(t, pool, plain, "opened"); !slices.Equal(got, []string{"slack"}) {
		t.Fatalf("without routes: %v, want slack", got)
	}
	routes := []outbox.Route{
		{Receiver: outbox.ReceiverWebhook, Provider: "stripe"},
		{Receiver: outbox.ReceiverWebhook, Reason: "not_found"}, // the same receiver twice: one row
		{Receiver: outbox.ReceiverPagerDuty, Workflow: "payments", Reason: "multiple_matches"},
		{Receiver: outbox.ReceiverPagerDuty, Level: 1},
	}
	if changed, err := store.SetRoutes(ctx, routes); err != nil || !changed {
		t.Fatalf("SetRoutes: %v, %v", changed, err)
	}
	if changed, err := store.SetRoutes(ctx, routes); err != nil || changed {
		t.Fatalf("SetRoutes again: %v, %v; want no change", changed, err)
	}
	if got, err := store.Routes(ctx); err != nil || !slices.Equal(got, routes) {
		t.Fatalf("Routes: %+v, %v", got, err)
	}
	stripe := openTicket(t, pool, "k1", "payments", "stripe")
	if got := receivers(t, pool, stripe, "opened"); !slices.Equal(got, []string{"webhook"}) {
		t.Errorf("a stripe not_found ticket at level 0: %v, want webhook alone (no route names slack here)", got)
	}
	// Level 1 reaches PagerDuty; the webhook keeps the ticket.
	rs := review.NewStore(pool, ledger.Native(), review.Policy{DefaultOwner: "U0OWNER", Window: time.Hour, Priority: "normal"})
	et, err := rs.EscalationTicket(ctx, stripe)
	if err != nil {
		t.Fatal(err)
	}
	step := review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: 0, ToLevel: 1, Owner: "U0LEAD", Priority: "high", Deadline: time.Now().Add(time.Hour)}
	if ok, err := rs.Escalate(ctx, et, step, review.EscalatedDetails{Step: step.Kind, ToLevel: 1, Owner: "U0LEAD"}, nil); err != nil || !ok {
		t.Fatalf("escalate: %v, %v", ok, err)
	}
	if got := receivers(t, pool, stripe, "escalated"); !slices.Equal(got, []string{"pagerduty", "webhook"}) {
		t.Errorf("escalated to level 1: %v, want pagerduty and webhook", got)
	}
	// Fewer routes: the old positions past the end are gone.
	if _, err := store.SetRoutes(ctx, routes[2:3]); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Routes(ctx); len(got) != 1 || got[0] != routes[2] {
		t.Errorf("after shrinking: %+v", got)
	}
	other := openTicket(t, pool, "k2", "newsletter", "postmark")
	if got := receivers(t, pool, other, "opened"); len(got) != 0 {
		t.Errorf("a ticket no route matches: %v, want no row", got)
	}
	if _, err := store.SetRoutes(ctx, []outbox.Route{{Receiver: "email"}}); err == nil {
		t.Error("a route to an unknown receiver was written")
	}
}

// TestRoutesTakeATransaction: routes written through a transaction are
// seen inside it, and gone when it rolls back.
func TestRoutesTakeATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	kept := []outbox.Route{{Receiver: outbox.ReceiverSlack}}
	if _, err := outbox.NewRoutes(pool).SetRoutes(ctx, kept); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	inTx := outbox.NewRoutes(tx)
	dropped := []outbox.Route{{Receiver: outbox.ReceiverWebhook, Provider: "stripe"}}
	if changed, err := inTx.SetRoutes(ctx, dropped); err != nil || !changed {
		t.Fatalf("SetRoutes in a transaction: %v, %v", changed, err)
	}
	if got, err := inTx.Routes(ctx); err != nil || !slices.Equal(got, dropped) {
		t.Fatalf("inside the transaction: %+v, %v; want %+v", got, err, dropped)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := outbox.NewRoutes(pool).Routes(ctx); err != nil || !slices.Equal(got, kept) {
		t.Errorf("after the rollback: %+v, %v; want %+v", got, err, kept)
	}
}

// TestMetricsKnowTheReceivers: the receiver label of the counters every
// receiver's dispatcher counts has the outbox's receivers as values.
func TestMetricsKnowTheReceivers(t *testing.T) {
	t.Parallel()
	if !slices.Equal(metrics.Receivers, outbox.Receivers) {
		t.Errorf("metrics.Receivers %v, outbox.Receivers %v: want the same", metrics.Receivers, outbox.Receivers)
	}
}
