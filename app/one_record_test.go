package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// TestOneRecordProvesOneOperation (I3): a provider that answers the same
// record for two operations (a search by recipient and body, say) proves
// at most one of them; the other goes to review. And a pending row that
// already names another record is not moved to done with a new one.
func TestOneRecordProvesOneOperation(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		sameRecord := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
			func(_ context.Context, q providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "SM_shared", CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
			},
		}}
		b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", sameRecord, 5*time.Second)})
		first := b.claim(t, "twin-1", "fake", stale)
		second := b.claim(t, "twin-2", "fake", stale)
		named := b.claim(t, "named-1", "fake", stale)
		if _, err := b.pool.Exec(context.Background(), b.sql(`UPDATE {T} SET {c:provider_record_id} = 'SM_other' WHERE {c:op_key} = $1`), named.OpKey); err != nil {
			t.Fatal(err)
		}
		client := b.startClient(t)
		b.sweep(t, client)
		b.waitSettled(t, []string{first.OpKey, second.OpKey, named.OpKey}, 30*time.Second)

		done, review := 0, 0
		for _, key := range []string{first.OpKey, second.OpKey} {
			switch op := b.status(t, key); op.Status {
			case ledger.StatusDone:
				done++
			case ledger.StatusReview:
				review++
				tk, ev := b.ticketOf(t, key)
				if tk.Reason != reviewMultiple || !strings.Contains(ev.Detail, "SM_shared") {
					t.Errorf("%s: ticket %s %q", key, tk.Reason, ev.Detail)
				}
			}
		}
		if done != 1 || review != 1 {
			t.Errorf("%d done and %d in review for two operations sharing one record; want 1 and 1", done, review)
		}
		if op := b.status(t, named.OpKey); op.Status != ledger.StatusReview || op.ProviderRecordID != "SM_other" {
			t.Errorf("row naming another record: %s %q, want review keeping SM_other", op.Status, op.ProviderRecordID)
		}
	})
}

const reviewMultiple = proof.ReasonMultipleMatches
