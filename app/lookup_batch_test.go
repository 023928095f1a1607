package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

// byKey is a provider at the edge that answers each op_key by its prefix,
// counting the asks per key: found-* (one agreeing record), shared-* (the
// same record for every key), nf-* (none), many-* (two), mismatch-* (a
// record with another payload), flaky-* (a transient error, then found),
// down-* (transient errors only) and block-* (waits for release, then
// found).
type byKey struct {
	release chan struct{}
	asked   chan string

	mu    sync.Mutex
	calls map[string]int
}

func (f *byKey) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[q.OpKey]++
	n := f.calls[q.OpKey]
	f.mu.Unlock()
	rec := func(id string) providers.Record {
		return providers.Record{ID: id, CreatedAt: q.FirstAttemptAt.Add(time.Second), Recipient: q.Recipient, PayloadHash: q.PayloadHash}
	}
	prefix, _, _ := strings.Cut(q.OpKey, "-")
	switch prefix {
	case "found":
		return []providers.Record{rec("rec_" + q.OpKey)}, nil
	case "shared":
		return []providers.Record{rec("rec_shared")}, nil
	case "many":
		return []providers.Record{rec("rec_a_" + q.OpKey), rec("rec_b_" + q.OpKey)}, nil
	case "mismatch":
		r := rec("rec_" + q.OpKey)
		r.PayloadHash = strings.Repeat("0", 64)
		return []providers.Record{r}, nil
	case "flaky":
		if n == 1 {
			return nil, providers.Transient(errors.New("HTTP 503"))
		}
		return []providers.Record{rec("rec_" + q.OpKey)}, nil
	case "down":
		return nil, providers.Transient(fmt.Errorf("HTTP 503 (ask %d)", n))
	case "block":
		if f.asked != nil {
			f.asked <- q.OpKey
		}
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []providers.Record{rec("rec_" + q.OpKey)}, nil
	}
	return nil, nil
}

func (f *byKey) Matching() providers.Matching { return providers.Matching{ByKey: true} }

func (f *byKey) asks(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

// TestBatchSettlesEachAsAlone: one lookup job holding operations with every
// kind of answer settles each as its own lookup would: done, not_found,
// multiple_matches, payload_mismatch, a transient error then done, and a
// budget spent on transient errors ending in lookup_failed whose evidence
// lists that operation's attempts, and only its own.
func TestBatchSettlesEachAsAlone(t *testing.T) {
	t.Parallel()
	f := &byKey{}
	b := setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", f, 3*time.Second)})
	keys := []string{"found-1", "nf-1", "many-1", "mismatch-1", "flaky-1", "down-1"}
	for _, k := range keys {
		b.claim(t, k, "fake", stale)
	}
	client := b.startClient(t)
	start := time.Now()
	b.sweep(t, client)
	b.waitSettled(t, keys, 60*time.Second)

	// The sweep handed all six on in one job.
	if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'lookup_batch' AND jsonb_array_length(args->'ops') = 6`); n != 1 {
		t.Errorf("%d lookup jobs holding the six operations, want one", n)
	}
	want := map[string]string{"found-1": "done", "nf-1": "not_found", "many-1": "multiple_matches",
		"mismatch-1": "payload_mismatch", "flaky-1": "done", "down-1": "lookup_failed"}
	got := map[string]string{}
	for _, k := range keys {
		op := b.status(t, k)
		if op.Status == ledger.StatusDone {
			got[k] = "done"
			if op.ProviderRecordID != "rec_"+k {
				t.Errorf("%s done with %q", k, op.ProviderRecordID)
			}
			continue
		}
		tk, _ := b.ticketOf(t, k)
		got[k] = string(tk.Reason)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if n := f.asks("flaky-1"); n != 2 {
		t.Errorf("flaky-1 asked %d times, want 2", n)
	}
	_, ev := b.ticketOf(t, "down-1")
	if len(ev.Errors) < 2 || len(ev.Errors) != f.asks("down-1") {
		t.Errorf("down-1's evidence lists %d attempts of %d asks: %+v", len(ev.Errors), f.asks("down-1"), ev.Errors)
	}
	for i, e := range ev.Errors {
		if e.Attempt != i+1 || !strings.Contains(e.Error, fmt.Sprintf("ask %d", i+1)) {
			t.Errorf("attempt %d in the evidence: %+v", i+1, e)
		}
	}
	if !strings.Contains(ev.Detail, "lookup_budget") {
		t.Errorf("detail %q does not say the budget ran out", ev.Detail)
	}
	// The budget ends when the next retry (1 s, then 2 s, ±20%) would not
	// fit in it: after the second ask at the earliest, which waits 0.8 s
	// or more after the first.
	if time.Since(start) < 800*time.Millisecond {
		t.Errorf("lookup_failed after %s: before a second ask could be made within the 3s budget", time.Since(start))
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.lookup_claims`); n != 0 {
		t.Errorf("%d claims left after every operation settled", n)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'lookup_batch' AND (attempt > 1 OR errors IS NOT NULL)`); n != 0 {
		t.Errorf("%d lookup jobs failed a run: retries travel with the operations, not in River's attempts", n)
	}
}

// TestBatchOneRecordTwoOperations: two operations of one job answered with
// the same record: one is done with it, the other gets a multiple_matches
// ticket naming it, whichever order the batch wrote them in.
func TestBatchOneRecordTwoOperations(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", &byKey{}, 5*time.Second)})
	keys := []string{"shared-1", "shared-2"}
	for _, k := range keys {
		b.claim(t, k, "fake", stale)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, keys, 30*time.Second)
	if n := b.count(t, `SELECT count(*) FROM ledger.operations WHERE status = 'done' AND provider_record_id = 'rec_shared'`); n != 1 {
		t.Fatalf("%d operations done with the one record, want 1", n)
	}
	for _, k := range keys {
		if op := b.status(t, k); op.Status == ledger.StatusReview {
			tk, ev := b.ticketOf(t, k)
			if tk.Reason != proof.ReasonMultipleMatches || !strings.Contains(ev.Detail, "rec_shared") {
				t.Errorf("%s: ticket %s %q", k, tk.Reason, ev.Detail)
			}
		}
	}
}

// TestBatchConfirmedMeanwhile: while a job asks, a workflow confirms one of
// its operations with its own record. The job's done for that operation
// writes nothing — the workflow's confirmation stands — and the others of
// the job settle.
func TestBatchConfirmedMeanwhile(t *testing.T) {
	t.Parallel()
	f := &byKey{release: make(chan struct{}), asked: make(chan string, 10)}
	b := setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", f, 30*time.Second)})
	keys := []string{"block-1", "block-2", "nf-1"}
	for _, k := range keys {
		b.claim(t, k, "fake", stale)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	<-f.asked
	<-f.asked // both in flight
	if _, err := b.ledger.Confirm(context.Background(), "block-1", "msg_from_workflow"); err != nil {
		t.Fatal(err)
	}
	close(f.release)
	b.waitSettled(t, keys, 30*time.Second)
	if got := b.status(t, "block-1"); got.Status != ledger.StatusDone || got.ProviderRecordID != "msg_from_workflow" {
		t.Errorf("block-1 = %s %q, want the workflow's confirmation untouched", got.Status, got.ProviderRecordID)
	}
	if got := b.status(t, "block-2"); got.Status != ledger.StatusDone || got.ProviderRecordID != "rec_block-2" {
		t.Errorf("block-2 = %s %q, want done by the lookup", got.Status, got.ProviderRecordID)
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.tickets`); n != 1 {
		t.Errorf("%d tickets, want nf-1's only", n)
	}
}

// TestConcurrentSweepsClaimOnce: sweeps running at once on two replicas
// hand each stale operation to exactly one lookup job.
func TestConcurrentSweepsClaimOnce(t *testing.T) {
	t.Parallel()
	f := &byKey{release: make(chan struct{})}
	fakes := func() map[string]*providers.Provider {
		return map[string]*providers.Provider{"fake": fakeProvider("fake", f, 30*time.Second)}
	}
	first := setup(t, baseConfig, fakes())
	var keys []string
	for i := range 300 {
		keys = append(keys, first.claim(t, fmt.Sprintf("block-%03d", i), "fake", stale).OpKey)
	}
	second := wire(t, first.url, baseConfig, fakes())
	clients := []*struct{ b *bundle }{{first}, {second}}
	var wg sync.WaitGroup
	for _, r := range clients {
		client := r.b.startClient(t)
		for range 2 {
			wg.Go(func() { r.b.sweep(t, client) })
		}
	}
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for first.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'sweep' AND state = 'completed'`) < 4 {
		if time.Now().After(deadline) {
			close(f.release)
			t.Fatal("sweeps did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	entries := first.count(t, `SELECT count(*) FROM sweeper.river_job, jsonb_array_elements(args->'ops') AS op WHERE kind = 'lookup_batch'`)
	distinct := first.count(t, `SELECT count(DISTINCT op->>'id') FROM sweeper.river_job, jsonb_array_elements(args->'ops') AS op WHERE kind = 'lookup_batch'`)
	claims := first.count(t, `SELECT count(*) FROM sweeper.lookup_claims`)
	close(f.release)
	if entries != len(keys) || distinct != len(keys) || claims != len(keys) {
		t.Errorf("after four concurrent sweeps: %d job entries, %d distinct operations, %d claims; want %d each",
			entries, distinct, claims, len(keys))
	}
	first.waitSettled(t, keys, 60*time.Second)
	if n := first.count(t, `SELECT count(*) FROM ledger.operations WHERE status = 'done'`); n != len(keys) {
		t.Errorf("%d of %d done", n, len(keys))
	}
}

// TestLostJobsClaimsReleased: an operation whose job was cancelled while it
// asked, and one whose claim names a job that no longer exists (River's
// cleaner deleted it, or it was lost), are claimed and looked up again by
// the next sweep.
func TestLostJobsClaimsReleased(t *testing.T) {
	t.Parallel()
	f := &byKey{release: make(chan struct{}), asked: make(chan string, 10)}
	b := setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", f, 30*time.Second)})
	ctx := context.Background()
	cancelled := b.claim(t, "block-cancelled", "fake", stale)
	client := b.startClient(t)
	b.sweep(t, client)
	<-f.asked
	var jobID int64
	if err := b.pool.QueryRow(ctx, `SELECT job_id FROM sweeper.lookup_claims WHERE operation_id = $1`, cancelled.ID).Scan(&jobID); err != nil {
		t.Fatal(err)
	}
	if _, err := client.JobCancel(ctx, jobID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE id = $1 AND state = 'cancelled'`, jobID) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the job was not cancelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := b.status(t, cancelled.OpKey); got.Status != ledger.StatusPending {
		t.Fatalf("cancelled job's operation is %s", got.Status)
	}
	orphan := b.claim(t, "found-orphan", "fake", stale)
	if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.lookup_claims (operation_id, job_id) VALUES ($1, 999999999)`, orphan.ID); err != nil {
		t.Fatal(err)
	}
	close(f.release)
	b.sweep(t, client)
	b.waitSettled(t, []string{cancelled.OpKey, orphan.OpKey}, 30*time.Second)
	for _, k := range []string{cancelled.OpKey, orphan.OpKey} {
		if got := b.status(t, k); got.Status != ledger.StatusDone {
			t.Errorf("%s is %s, want done by the next sweep's job", k, got.Status)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.lookup_claims`); n != 0 {
		t.Errorf("%d claims left", n)
	}
}

// TestSweepOnceLeavesHeldOperations: `sweep --once` beside a daemon does not
// look up an operation a daemon's lookup job holds; one whose claim
// outlived its job (lost) it releases and settles, as the sweep does.
func TestSweepOnceLeavesHeldOperations(t *testing.T) {
	t.Parallel()
	f := &byKey{}
	b := setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", f, 5*time.Second)})
	ctx := context.Background()
	held := b.claim(t, "found-held", "fake", stale)
	lost := b.claim(t, "found-lost", "fake", stale)
	free := b.claim(t, "found-free", "fake", stale)
	// A daemon's job, not yet run, holds one; the other's job is gone.
	daemon, err := b.sweeper.NewDaemon(app.ClientOptions{NoPeriodic: true})
	if err != nil {
		t.Fatal(err)
	}
	job, err := daemon.Client.Insert(ctx, jobs.LookupBatchArgs{Provider: "fake", Ops: []jobs.QueuedOp{{ID: held.ID}}},
		&river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `INSERT INTO sweeper.lookup_claims (operation_id, job_id) VALUES ($1, $2), ($3, 999999999)`,
		held.ID, job.Job.ID, lost.ID); err != nil {
		t.Fatal(err)
	}
	sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.HeldByDaemon != 1 || sum.Done != 2 || f.asks(held.OpKey) != 0 {
		t.Errorf("summary %+v, %d asks for the held operation; want it left alone", sum, f.asks(held.OpKey))
	}
	for _, k := range []string{free.OpKey, lost.OpKey} {
		if got := b.status(t, k); got.Status != ledger.StatusDone {
			t.Errorf("%s is %s", k, got.Status)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.lookup_claims WHERE operation_id <> $1`, held.ID); n != 0 {
		t.Errorf("%d claims left besides the daemon's", n)
	}
}
