package silence_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
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
