package settle_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// auditFake is the http lookup protocol's endpoint for the audit tests:
// the records it holds by op_key, and whether it is down (503).
type auditFake struct {
	*lookupServer
	down    atomic.Bool
	mu      sync.Mutex
	records map[string][]match
	asked   map[string]int
}

func newAuditFake(t *testing.T, records map[string][]match) *auditFake {
	f := &auditFake{records: records, asked: map[string]int{}}
	f.lookupServer = newLookupServer(t, func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		key := r.URL.Query().Get("op_key")
		f.mu.Lock()
		f.asked[key]++
		ms := f.records[key]
		f.mu.Unlock()
		writeMatches(w, ms...)
	})
	return f
}

func (f *auditFake) timesAsked(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[key]
}

// settled writes an operation as a workflow does and settles it as the
// workflow would: done with record, or failed when record is "".
func settled(t *testing.T, pool *pgxpool.Pool, key, provider, record string) ledger.Operation {
	t.Helper()
	ctx := context.Background()
	claim(t, pool, key, provider, time.Hour)
	store := ledger.NewStore(pool, ledger.Native())
	var err error
	var op ledger.Operation
	if record == "" {
		op, err = store.Reject(ctx, key)
	} else {
		op, err = store.Confirm(ctx, key, record)
	}
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// refuseLedgerUpdates makes the database refuse any change to the ledger
// from now on: the audit never writes a settled row.
func refuseLedgerUpdates(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `
		CREATE FUNCTION ledger.audit_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'the audit wrote ledger row %', OLD.op_key; END $$;
		CREATE TRIGGER audit_test_refuse BEFORE UPDATE OR DELETE ON ledger.operations
		FOR EACH ROW EXECUTE FUNCTION ledger.audit_test_refuse();`); err != nil {
		t.Fatal(err)
	}
}

func auditorOn(pool *pgxpool.Pool, p *providers.Provider) *settle.Auditor {
	return settle.NewAuditor(ledger.Native(), &settle.Auditor{
		DB:        pool,
		Reviews:   review.NewStore(pool, ledger.Native(), policy()),
		Providers: map[string]*providers.Provider{p.Name: p},
		Policies:  map[string]settle.AuditPolicy{p.Name: {After: 0, Lookback: 24 * time.Hour, Rate: 1000}},
		Logger:    discard(),
		Now:       func() time.Time { return time.Now().Add(time.Second) },
	})
}

func auditTickets(t *testing.T, pool *pgxpool.Pool) map[string]review.Ticket {
	t.Helper()
	list, err := review.NewStore(pool, ledger.Native(), policy()).List(context.Background(), review.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]review.Ticket{}
	for _, tk := range list {
		out[tk.OpKey] = tk
	}
	return out
}

// TestAuditFindsWhatSettlingCouldNot: a done operation whose provider
// holds two records of it, a failed one whose effect exists, one found
// again alone, one the provider forgot: two tickets with their evidence,
// nothing else, and no ledger row written (a trigger refuses it).
func TestAuditFindsWhatSettlingCouldNot(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	created := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	fake := newAuditFake(t, map[string][]match{
		"dup":    {{ID: "msg-1", CreatedAt: created}, {ID: "msg-2", CreatedAt: created}},
		"failed": {{ID: "msg-9", CreatedAt: created}},
		"single": {{ID: "msg-5", CreatedAt: created}},
		// "forgot": nothing — the provider purged it, or never listed it.
	})
	p := httpProvider(t, "mail", "op_key", fake.lookupServer, limits())
	settled(t, pool, "dup", "mail", "msg-1")
	settled(t, pool, "failed", "mail", "")
	settled(t, pool, "single", "mail", "msg-5")
	settled(t, pool, "forgot", "mail", "msg-7")
	refuseLedgerUpdates(t, pool)

	report, err := auditorOn(pool, p).Audit(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	if report.Audited != 4 || report.Findings[proof.ReasonDuplicateEffect] != 1 || report.Findings[proof.ReasonEffectAfterFailed] != 1 {
		t.Fatalf("report = %+v, want 4 audited, one duplicate, one effect after failed", report)
	}
	tickets := auditTickets(t, pool)
	if len(tickets) != 2 {
		t.Fatalf("tickets for %v, want dup and failed alone", slices.Collect(func(yield func(string) bool) {
			for k := range tickets {
				yield(k)
			}
		}))
	}
	dup := tickets["dup"]
	if dup.Reason != proof.ReasonDuplicateEffect {
		t.Errorf("dup's ticket reason = %s", dup.Reason)
	}
	var ev proof.Evidence
	if err := json.Unmarshal(dup.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Records) != 2 || ev.LedgerRecordID != "msg-1" || ev.LedgerStatus != ledger.StatusDone {
		t.Errorf("dup's evidence: %d records, ledger %s %q; want both records and the ledger's msg-1", len(ev.Records), ev.LedgerStatus, ev.LedgerRecordID)
	}
	if tickets["failed"].Reason != proof.ReasonEffectAfterFailed {
		t.Errorf("failed's ticket reason = %s", tickets["failed"].Reason)
	}

	// A second pass asks nobody again.
	again, err := auditorOn(pool, p).Audit(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	if again.Audited != 0 || fake.timesAsked("dup") != 1 {
		t.Errorf("second pass audited %d, dup asked %d times: each operation is audited once", again.Audited, fake.timesAsked("dup"))
	}

	// The audit ticket's resolution is a verdict: the ledger (whose
	// updates the trigger refuses) stays as it is.
	if _, err := review.NewStore(pool, ledger.Native(), policy()).Resolve(ctx, review.Resolution{
		TicketID: dup.ID, Outcome: review.ResolutionDuplicate, ProviderRecordID: "msg-1", By: "U0DEFAULT1",
		ConfirmDiffers: true,
	}); err != nil {
		t.Fatalf("resolving an audit ticket: %v", err)
	}
}

// TestAuditWaitsForADownProvider: a provider that fails during the audit
// leaves its operations claimed, due again later; none is audited clean.
func TestAuditWaitsForADownProvider(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	created := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	fake := newAuditFake(t, map[string][]match{"dup": {{ID: "m1", CreatedAt: created}, {ID: "m2", CreatedAt: created}}})
	fake.down.Store(true)
	p := httpProvider(t, "mail", "op_key", fake.lookupServer, limits())
	settled(t, pool, "dup", "mail", "m1")
	refuseLedgerUpdates(t, pool)

	report, err := auditorOn(pool, p).Audit(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	if report.Audited != 0 || report.Retry != 1 {
		t.Fatalf("report while down = %+v, want the operation left for later", report)
	}
	if len(auditTickets(t, pool)) != 0 {
		t.Fatal("a ticket while the provider was down")
	}
	// Due again (the wait passed), and the provider back: found.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.audits SET retry_at = now()`); err != nil {
		t.Fatal(err)
	}
	fake.down.Store(false)
	report, err = auditorOn(pool, p).Audit(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	if report.Audited != 1 || report.Findings[proof.ReasonDuplicateEffect] != 1 {
		t.Fatalf("report once back = %+v, want the duplicate found", report)
	}
}

// TestAuditOnceAcrossReplicas: two auditors on one ledger, side by side,
// audit each operation once and open one ticket.
func TestAuditOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	created := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	records := map[string][]match{"dup-0": {{ID: "a0", CreatedAt: created}, {ID: "b0", CreatedAt: created}}}
	settled(t, pool, "dup-0", "mail", "a0")
	for _, k := range []string{"s1", "s2", "s3", "s4", "s5", "s6"} {
		records[k] = []match{{ID: "r-" + k, CreatedAt: created}}
		settled(t, pool, k, "mail", "r-"+k)
	}
	fake := newAuditFake(t, records)
	refuseLedgerUpdates(t, pool)
	var wg sync.WaitGroup
	reports := make([]settle.AuditReport, 2)
	for i := range reports {
		p := httpProvider(t, "mail", "op_key", fake.lookupServer, limits())
		a := auditorOn(pool, p)
		wg.Go(func() {
			var err error
			reports[i], err = a.Audit(ctx, "mail")
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := reports[0].Audited + reports[1].Audited; n != 7 {
		t.Errorf("audited %d in all, want 7 (%+v)", n, reports)
	}
	for k := range records {
		if got := fake.timesAsked(k); got != 1 {
			t.Errorf("%s asked %d times, want once", k, got)
		}
	}
	if tickets := auditTickets(t, pool); len(tickets) != 1 || tickets["dup-0"].Reason != proof.ReasonDuplicateEffect {
		t.Errorf("tickets = %v, want dup-0's alone", tickets)
	}
}

// TestAuditLetsPendingLookupsGoFirst: a provider whose lookups are behind
// — a stale pending operation waiting longer than the policy's Behind past
// stale — is not audited in that pass; one whose stale operations only
// wait for the next sweep, as a provider with traffic always has some, is.
func TestAuditLetsPendingLookupsGoFirst(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		age, behind  time.Duration // the pending operation's first attempt; the policy's Behind
		wantDeferred bool
	}{
		// limits(): stale after 10 minutes.
		{"any stale operation, no Behind", time.Hour, 0, true},
		{"stale for 50 minutes, Behind 30", time.Hour, 30 * time.Minute, true},
		{"stale for 10 minutes, Behind 30", 20 * time.Minute, 30 * time.Minute, false},
		{"not stale yet", 5 * time.Minute, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool := dbtest.NewPool(t)
			fake := newAuditFake(t, nil)
			p := httpProvider(t, "mail", "op_key", fake.lookupServer, limits())
			settled(t, pool, "done-1", "mail", "x1")
			claim(t, pool, "waiting", "mail", c.age)
			a := auditorOn(pool, p)
			a.Behind = func() time.Duration { return c.behind }
			report, err := a.Audit(context.Background(), "mail")
			if err != nil {
				t.Fatal(err)
			}
			if c.wantDeferred && (!report.Deferred || fake.requests.Load() != 0) {
				t.Errorf("report = %+v after %d requests, want deferred and none", report, fake.requests.Load())
			}
			if !c.wantDeferred && (report.Deferred || report.Audited != 1 || fake.requests.Load() == 0) {
				t.Errorf("report = %+v after %d requests, want the settled operation audited", report, fake.requests.Load())
			}
		})
	}
}

// TestOrphansAreRecordsNoRowNames: a provider listing records by op_key
// has those whose op_key no ledger row has reported, nothing written; one
// that cannot list says so.
func TestOrphansAreRecordsNoRowNames(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	ctx := context.Background()
	settled(t, pool, "known-1", "listing", "sim_x")
	adapter, err := sim.Kind.New("listing", &sim.Config{Simulated: true, Listed: []string{"known-1", "nobody-wrote-this"}}, providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	listing := providers.NewProvider("listing", sim.Kind.Name, adapter, limits())
	fake := newAuditFake(t, nil)
	byHTTP := httpProvider(t, "mail", "op_key", fake.lookupServer, limits())
	a := settle.NewAuditor(ledger.Native(), &settle.Auditor{DB: pool, Reviews: review.NewStore(pool, ledger.Native(), policy()),
		Providers: map[string]*providers.Provider{"listing": listing, "mail": byHTTP}, Logger: discard(), Now: time.Now})
	refuseLedgerUpdates(t, pool)
	reports, err := a.Orphans(ctx, time.Now().Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || reports[0].Provider != "listing" || !reports[1].Unsupported {
		t.Fatalf("reports = %+v, want listing's and mail's (unsupported)", reports)
	}
	if r := reports[0]; r.Listed != 2 || len(r.Orphans) != 1 || r.Orphans[0].OpKey != "nobody-wrote-this" {
		t.Errorf("listing's report = %+v, want 2 listed and the one no row names", r)
	}
	if len(auditTickets(t, pool)) != 0 || fake.requests.Load() != 0 {
		t.Error("the report wrote a ticket or asked a provider that cannot list")
	}
}
