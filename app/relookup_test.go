package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// TestScheduledRelookups: open not_found tickets are looked up again on a
// schedule — after relookup_after, then twice as long each time — without
// an event or an alert while nothing is found; the one whose record turns
// up (a search index that lagged) resolves itself as done. A
// payload_mismatch ticket needs a person: it is never looked up again.
func TestScheduledRelookups(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		var indexed atomic.Bool
		lagging := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
			func(_ context.Context, q providers.Query) ([]providers.Record, error) {
				switch {
				case strings.HasPrefix(q.OpKey, "lagging") && indexed.Load():
					return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
				case strings.HasPrefix(q.OpKey, "differs"):
					return []providers.Record{{ID: "rec_" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: strings.Repeat("0", 64)}}, nil
				}
				return nil, nil
			},
		}}
		b := setupEscalationOn(t, lt, escalationConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", lagging, 5*time.Second)})
		ids := b.openTickets(t, "fake", "lagging-1", "never-1", "differs-1")
		opened := b.clock.Now()
		relookups := func() app.RelookupSummary {
			t.Helper()
			sum, err := b.sweeper.RelookupOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return sum
		}
		due := func(key string) (int, time.Time) {
			t.Helper()
			tk := b.ticket(t, ids[key])
			return tk.Relookups, tk.RelookupAt
		}

		if got := relookups(); got.Due != 0 {
			t.Fatalf("before relookup_after: %+v, want nothing due", got)
		}
		if n, at := due("differs-1"); n != 0 || !at.IsZero() {
			t.Errorf("payload_mismatch ticket: %d re-lookups, next at %s; want none ever", n, at)
		}

		b.clock.set(opened.Add(61 * time.Second))
		if diff := cmp.Diff(app.RelookupSummary{Due: 2, Relooked: 2}, relookups()); diff != "" {
			t.Errorf("first re-lookups (-want +got):\n%s", diff)
		}
		if n, at := due("never-1"); n != 1 || !at.Equal(b.clock.Now().Add(2*time.Minute)) {
			t.Errorf("after the first: %d re-lookups, next at %s; want 1, two minutes on", n, at)
		}
		if got := relookups(); got.Due != 0 {
			t.Errorf("right after: %+v, want nothing due", got)
		}

		indexed.Store(true)
		b.clock.set(b.clock.Now().Add(2*time.Minute + time.Second))
		if diff := cmp.Diff(app.RelookupSummary{Due: 2, Resolved: 1, Relooked: 1}, relookups()); diff != "" {
			t.Errorf("second re-lookups (-want +got):\n%s", diff)
		}
		if op := b.status(t, "lagging-1"); op.Status != ledger.StatusDone || op.ProviderRecordID != "rec_lagging-1" {
			t.Errorf("lagging-1 is %s %q, want done by itself", op.Status, op.ProviderRecordID)
		}
		if n, at := due("never-1"); n != 2 || !at.Equal(b.clock.Now().Add(4*time.Minute)) {
			t.Errorf("after the second: %d re-lookups, next at %s; want 2, four minutes on", n, at)
		}
		want := map[string][]string{
			"lagging-1": {fmt.Sprintf("opened ticket:%d:opened", ids["lagging-1"]), fmt.Sprintf("resolved_by_relookup ticket:%d:resolved", ids["lagging-1"])},
			"never-1":   {fmt.Sprintf("opened ticket:%d:opened", ids["never-1"])},
		}
		for key, events := range want {
			if diff := cmp.Diff(events, b.eventKeys(t, ids[key])); diff != "" {
				t.Errorf("%s events (-want +got):\n%s", key, diff)
			}
		}
		tk, err := b.sweeper.Reviews().Get(context.Background(), ids["lagging-1"])
		if err != nil || tk.State != review.StateResolved || tk.ResolvedBy != review.ActorSweeper {
			t.Errorf("lagging-1's ticket %+v, %v; want resolved by sweeper", tk, err)
		}
	})
}

// TestEscalationGoesOnWhileTheProviderIsDown: a ticket's deadline passes
// while its provider is down for the cluster. The re-lookup before the
// step asks nobody (the lookups wait for a probe) and the escalation is
// taken anyway, within a few seconds, saying why nothing was looked up.
func TestEscalationGoesOnWhileTheProviderIsDown(t *testing.T) {
	t.Parallel()
	nothing := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(context.Context, providers.Query) ([]providers.Record, error) { return nil, nil },
	}}
	b := setupEscalation(t, escalationConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", nothing, 5*time.Second)})
	id := b.openTickets(t, "fake", "down-1")["down-1"]
	b.sweeper.TrackHealth()
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO sweeper.provider_health (provider, state, since, probe_at, last_error)
		VALUES ('fake', 'down', now(), now() + interval '1 hour', 'HTTP 503')`); err != nil {
		t.Fatal(err)
	}
	b.passDue(t, id)
	start := time.Now()
	sum := b.escalateOnce(t)
	if took := time.Since(start); sum.Escalated[1] != 1 || took > 15*time.Second {
		t.Fatalf("escalation while down: %+v in %s; want one step, promptly", sum, took)
	}
	raw, _ := json.Marshal(b.lastDetails(t, id))
	if !strings.Contains(string(raw), "down") {
		t.Errorf("the escalated event's re-lookup does not say the provider is down: %s", raw)
	}
}
