package ledger_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestStats: the ledger's counts of unsettled operations by provider and
// status fold the providers not known into one name, with the age of each
// one's oldest pending operation; settled operations are not counted but
// estimated from the table's statistics, once it was analyzed;
// CountPending counts every pending row of the provider, however old.
func TestStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at)
		VALUES ('m-1', 'wf', 'mailer', 'send', repeat('a', 64), now() - interval '1 hour'),
		       ('m-2', 'wf', 'mailer', 'send', repeat('a', 64), now()),
		       ('t-1', 'wf', 'mailerr', 'send', repeat('a', 64), now() - interval '2 hours'),
		       ('t-2', 'wf', 'Mailer', 'send', repeat('a', 64), now() - interval '3 hours')`); err != nil {
		t.Fatal(err)
	}
	store := ledger.NewStore(pool, ledger.Native())
	if _, err := store.Reject(ctx, "m-2"); err != nil {
		t.Fatal(err)
	}
	st, err := store.Stats(ctx, []string{"mailer", "sms"}, "other")
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.StatusCount{
		{Provider: "mailer", Status: ledger.StatusPending, Count: 1},
		{Provider: "other", Status: ledger.StatusPending, Count: 2},
	}
	byName := func(a, b ledger.StatusCount) bool { return a.Provider+string(a.Status) < b.Provider+string(b.Status) }
	if diff := cmp.Diff(want, st.Operations, cmpopts.SortSlices(byName)); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
	ages := map[string]float64{}
	for _, a := range st.OldestPending {
		ages[a.Provider] = a.Seconds
	}
	if len(ages) != 2 || ages["mailer"] < 3600 || ages["mailer"] > 3660 || ages["other"] < 3*3600 || ages["other"] > 3*3600+60 {
		t.Errorf("oldest pending = %v, want mailer an hour old and other three", ages)
	}

	if len(st.Settled) != 0 {
		t.Errorf("settled estimate before any ANALYZE = %v, want none", st.Settled)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status)
			SELECT 'f-' || i, 'wf', 'mailer', 'send', repeat('a', 64), 'failed' FROM generate_series(1, 3000) AS i;
		ANALYZE ledger.operations`); err != nil {
		t.Fatal(err)
	}
	if st, err = store.Stats(ctx, []string{"mailer", "sms"}, "other"); err != nil {
		t.Fatal(err)
	}
	// ANALYZE of a table this small reads every row: the estimate is exact.
	if diff := cmp.Diff([]ledger.StatusCount{{Status: ledger.StatusFailed, Count: 3001}}, st.Settled); diff != "" {
		t.Errorf("settled estimate (-want +got):\n%s", diff)
	}

	for provider, want := range map[string]int64{"mailer": 1, "mailerr": 1, "sms": 0} {
		if n, err := store.CountPending(ctx, provider); err != nil || n != want {
			t.Errorf("CountPending(%s) = %d, %v; want %d", provider, n, err, want)
		}
	}
}
