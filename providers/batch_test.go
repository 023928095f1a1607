package providers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
)

// batchAdapter is a hand-written keyed adapter that batches: answer says
// what each request gets, and it counts requests.
type batchAdapter struct {
	max      int
	answer   func(qs []providers.Query) ([]providers.BatchAnswer, error)
	requests atomic.Int64
	mu       sync.Mutex
	sizes    []int
}

func (b *batchAdapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	answers, err := b.LookupBatch(ctx, []providers.Query{q})
	if err != nil {
		return nil, err
	}
	return answers[0].Records, answers[0].Err
}

func (b *batchAdapter) MaxBatch() int { return b.max }

func (b *batchAdapter) LookupBatch(_ context.Context, qs []providers.Query) ([]providers.BatchAnswer, error) {
	b.requests.Add(1)
	b.mu.Lock()
	b.sizes = append(b.sizes, len(qs))
	b.mu.Unlock()
	return b.answer(qs)
}

func (b *batchAdapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// recordFor is the one record the fake holds for an op_key.
func recordFor(opKey string) providers.Record {
	return providers.Record{ID: "rec_" + opKey, PayloadHash: strings.Repeat("a", 64)}
}

// eachFound answers every query with its own record.
func eachFound(qs []providers.Query) ([]providers.BatchAnswer, error) {
	out := make([]providers.BatchAnswer, len(qs))
	for i, q := range qs {
		out[i].Records = []providers.Record{recordFor(q.OpKey)}
	}
	return out, nil
}

func queries(n int) []providers.Query {
	qs := make([]providers.Query, n)
	for i := range qs {
		qs[i] = query
		qs[i].OpKey = fmt.Sprintf("op-%02d", i)
	}
	return qs
}

func TestLookupManyChunksAndKeepsOrder(t *testing.T) {
	t.Parallel()
	a := &batchAdapter{max: 10, answer: eachFound}
	p := providers.NewProvider("orders", "http", a, limits(time.Second))
	qs := queries(25)

	results := p.LookupMany(t.Context(), qs)

	if len(results) != len(qs) {
		t.Fatalf("%d results for %d queries", len(results), len(qs))
	}
	for i, r := range results {
		if r.Err != nil || len(r.Records) != 1 || r.Records[0].ID != "rec_"+qs[i].OpKey {
			t.Errorf("result %d = %+v; want the record of %s", i, r, qs[i].OpKey)
		}
	}
	if diff := cmp.Diff([]int{10, 10, 5}, a.sizes); diff != "" {
		t.Errorf("request sizes (-want +got):\n%s", diff)
	}
	if p.MaxBatch() != 10 {
		t.Errorf("MaxBatch = %d, want 10", p.MaxBatch())
	}
}

func TestLookupManyRateLimitCountsRequests(t *testing.T) {
	t.Parallel()
	a := &batchAdapter{max: 10, answer: eachFound}
	l := limits(100 * time.Millisecond)
	l.RateLimit = 3 // a burst of 3 requests, then one every 333ms: past lookup_timeout
	p := providers.NewProvider("orders", "http", a, l)

	for i, r := range p.LookupMany(t.Context(), queries(30)) {
		if r.Err != nil {
			t.Errorf("result %d: %v; three requests fit a rate limit of three", i, r.Err)
		}
	}
	// A fourth request is paced: its queries are handed back, not failed.
	for i, r := range p.LookupMany(t.Context(), queries(2)) {
		if class, _ := providers.Classify(r.Err); class != providers.ClassPaced {
			t.Errorf("result %d after the burst: %v; want paced", i, r.Err)
		}
	}
	if n := a.requests.Load(); n != 3 {
		t.Errorf("%d requests reached the adapter, want 3", n)
	}
}

func TestLookupManyPacedAsksNobody(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	a := &batchAdapter{max: 5, answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
		if qs[0].OpKey == "hold" {
			once.Do(func() { close(started) })
			<-release
		}
		return eachFound(qs)
	}}
	l := limits(100 * time.Millisecond)
	l.Concurrency = 1
	p := providers.NewProvider("orders", "http", a, l)

	done := make(chan struct{})
	go func() {
		defer close(done)
		hold := query
		hold.OpKey = "hold"
		p.Lookup(context.Background(), hold) //nolint:errcheck // only holds the slot
	}()
	<-started
	results := p.LookupMany(t.Context(), queries(12))
	close(release)
	<-done
	for i, r := range results {
		if class, _ := providers.Classify(r.Err); class != providers.ClassPaced {
			t.Errorf("result %d = %+v; want paced while the only slot is busy", i, r)
		}
	}
	if n := a.requests.Load(); n != 1 {
		t.Errorf("%d requests, want only the one holding the slot", n)
	}
}

func TestLookupManyAnswers(t *testing.T) {
	t.Parallel()
	transient := func(t *testing.T, r providers.Result) {
		t.Helper()
		if class, _ := providers.Classify(r.Err); r.Err == nil || class != providers.ClassTransient || r.Records != nil {
			t.Errorf("result = %+v; want a transient error and no records", r)
		}
	}
	found := func(t *testing.T, r providers.Result, opKey string) {
		t.Helper()
		if r.Err != nil || len(r.Records) != 1 || r.Records[0].ID != "rec_"+opKey {
			t.Errorf("result = %+v; want the record of %s", r, opKey)
		}
	}
	tests := []struct {
		desc   string
		answer func(qs []providers.Query) ([]providers.BatchAnswer, error)
		check  func(t *testing.T, rs []providers.Result)
	}{
		{
			desc: "one failing key does not fail the others",
			answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
				out, _ := eachFound(qs)
				out[1] = providers.BatchAnswer{Err: providers.Transient(errors.New("HTTP 503 for this key"))}
				return out, nil
			},
			check: func(t *testing.T, rs []providers.Result) {
				found(t, rs[0], "op-00")
				transient(t, rs[1])
				found(t, rs[2], "op-02")
			},
		},
		{
			desc: "the same record for two keys proves neither",
			answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
				out, _ := eachFound(qs)
				out[2].Records = append(out[2].Records, recordFor(qs[0].OpKey))
				return out, nil
			},
			check: func(t *testing.T, rs []providers.Result) {
				transient(t, rs[0])
				found(t, rs[1], "op-01")
				transient(t, rs[2])
			},
		},
		{
			desc: "a record listed twice for one key is one record",
			answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
				out, _ := eachFound(qs)
				out[0].Records = append(out[0].Records, recordFor(qs[0].OpKey))
				return out, nil
			},
			check: func(t *testing.T, rs []providers.Result) {
				found(t, rs[0], "op-00")
				found(t, rs[1], "op-01")
			},
		},
		{
			desc: "a malformed record fails its query only",
			answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
				out, _ := eachFound(qs)
				out[1].Records = []providers.Record{{ID: " padded "}}
				return out, nil
			},
			check: func(t *testing.T, rs []providers.Result) {
				found(t, rs[0], "op-00")
				transient(t, rs[1])
				found(t, rs[2], "op-02")
			},
		},
		{
			desc: "fewer answers than queries fail them all",
			answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
				out, _ := eachFound(qs)
				return out[1:], nil
			},
			check: func(t *testing.T, rs []providers.Result) {
				for _, r := range rs {
					transient(t, r)
				}
			},
		},
		{
			desc: "an error for the request is every query's, and keeps its class",
			answer: func([]providers.Query) ([]providers.BatchAnswer, error) {
				return nil, providers.Permanent(errors.New("HTTP 401 for " + query.Recipient))
			},
			check: func(t *testing.T, rs []providers.Result) {
				for i, r := range rs {
					if class, _ := providers.Classify(r.Err); class != providers.ClassPermanent {
						t.Errorf("result %d = %+v; want permanent", i, r)
					}
					if r.Err != nil && strings.Contains(r.Err.Error(), query.Recipient) {
						t.Errorf("result %d shows the recipient: %v", i, r.Err)
					}
				}
			},
		},
		{
			desc:   "a panicking adapter is transient for every query",
			answer: func([]providers.Query) ([]providers.BatchAnswer, error) { panic("nil map") },
			check: func(t *testing.T, rs []providers.Result) {
				for _, r := range rs {
					transient(t, r)
				}
			},
		},
		{
			desc: "nothing found is zero records, not nil",
			answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
				return make([]providers.BatchAnswer, len(qs)), nil
			},
			check: func(t *testing.T, rs []providers.Result) {
				for i, r := range rs {
					if r.Err != nil || r.Records == nil || len(r.Records) != 0 {
						t.Errorf("result %d = %#v; want zero records", i, r)
					}
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			p := providers.NewProvider("orders", "http", &batchAdapter{max: 10, answer: tc.answer}, limits(time.Second))
			tc.check(t, p.LookupMany(t.Context(), queries(3)))
		})
	}
}

func TestLookupManyRateLimitedStopsTheRest(t *testing.T) {
	t.Parallel()
	a := &batchAdapter{max: 2, answer: func([]providers.Query) ([]providers.BatchAnswer, error) {
		return nil, providers.RateLimited(7*time.Second, errors.New("HTTP 429"))
	}}
	p := providers.NewProvider("orders", "http", a, limits(time.Second))
	// The request sent is rate-limited; the ones not sent are paced by
	// its Retry-After: the provider never saw them, so they spend no
	// attempt and start no budget.
	for i, r := range p.LookupMany(t.Context(), queries(6)) {
		want := providers.ClassPaced
		if i < 2 {
			want = providers.ClassRateLimited
		}
		if class, delay := providers.Classify(r.Err); class != want || delay != 7*time.Second {
			t.Errorf("result %d = %v; want %s 7s", i, r.Err, want)
		}
	}
	if n := a.requests.Load(); n != 1 {
		t.Errorf("%d requests after a 429, want 1", n)
	}
}

func TestLookupManyRepeatedKeyGoesToAnotherRequest(t *testing.T) {
	t.Parallel()
	a := &batchAdapter{max: 10, answer: eachFound}
	p := providers.NewProvider("orders", "http", a, limits(time.Second))
	qs := queries(3)
	qs[2].OpKey = qs[0].OpKey
	for i, r := range p.LookupMany(t.Context(), qs) {
		if r.Err != nil {
			t.Errorf("result %d: %v", i, r.Err)
		}
	}
	if diff := cmp.Diff([]int{2, 1}, a.sizes); diff != "" {
		t.Errorf("request sizes (-want +got):\n%s", diff)
	}
}

// resemblanceBatcher batches but does not match by key.
type resemblanceBatcher struct{ *batchAdapter }

func (resemblanceBatcher) Matching() providers.Matching { return providers.Matching{} }

func TestLookupManyFallsBackToOneRequestPerQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		adapter providers.Lookup
		count   func() int64
	}{
		{desc: "an adapter that does not batch", adapter: func() providers.Lookup {
			var n atomic.Int64
			return lookupFunc(func(_ context.Context, q providers.Query) ([]providers.Record, error) {
				n.Add(1)
				return []providers.Record{recordFor(q.OpKey)}, nil
			})
		}()},
		{desc: "max batch 1", adapter: &batchAdapter{max: 1, answer: eachFound}},
		{desc: "a batching adapter that matches by resemblance", adapter: resemblanceBatcher{&batchAdapter{max: 10, answer: eachFound}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			p := providers.NewProvider("orders", "http", tc.adapter, limits(time.Second))
			if p.MaxBatch() != 1 {
				t.Errorf("MaxBatch = %d, want 1", p.MaxBatch())
			}
			qs := queries(4)
			for i, r := range p.LookupMany(t.Context(), qs) {
				if r.Err != nil || len(r.Records) != 1 || r.Records[0].ID != "rec_"+qs[i].OpKey {
					t.Errorf("result %d = %+v", i, r)
				}
			}
			var sizes []int
			switch a := tc.adapter.(type) {
			case *batchAdapter:
				sizes = a.sizes
			case resemblanceBatcher:
				sizes = a.sizes
			}
			for _, s := range sizes {
				if s != 1 {
					t.Errorf("a request of %d queries; want one per query", s)
				}
			}
		})
	}
}

// fakeHealth is a provider's health that says down while down is set, and
// records what requests report.
type fakeHealth struct {
	down atomic.Bool
	// probe has every request allowed take the probe's turn.
	probe   atomic.Bool
	mu      sync.Mutex
	dones   []string
	details []string
}

func (h *fakeHealth) Allow(context.Context) (bool, time.Duration, error) {
	if h.down.Load() {
		return false, 3 * time.Second, errors.New("down")
	}
	return h.probe.Load(), 0, nil
}

func (h *fakeHealth) Done(_ context.Context, probe, failed bool, op, detail string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	done := fmt.Sprintf("%s failed=%t", op, failed)
	if probe {
		done = "probe " + done
	}
	h.dones = append(h.dones, done)
	h.details = append(h.details, detail)
	return nil
}

func (h *fakeHealth) DownTotal(context.Context) time.Duration { return 0 }

func TestLookupManyHealth(t *testing.T) {
	t.Parallel()
	a := &batchAdapter{max: 2, answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
		if qs[0].OpKey == "op-02" {
			return nil, providers.Transient(errors.New("HTTP 503"))
		}
		return eachFound(qs)
	}}
	h := &fakeHealth{}
	p := providers.NewProvider("orders", "http", a, limits(time.Second))
	p.SetHealth(h)

	p.LookupMany(t.Context(), queries(4))
	// A request that answers reports once; one that fails as a whole
	// reports a failure for each operation it asked for, as single
	// lookups would have: the tracker counts failures of distinct
	// operations.
	if diff := cmp.Diff([]string{"op-00,op-01 failed=false", "op-02 failed=true", "op-03 failed=true"}, h.dones); diff != "" {
		t.Errorf("reported to health (-want +got):\n%s", diff)
	}

	h.down.Store(true)
	for i, r := range p.LookupMany(t.Context(), queries(4)) {
		if class, delay := providers.Classify(r.Err); class != providers.ClassPaced || delay != 3*time.Second {
			t.Errorf("result %d while down = %v; want paced 3s", i, r.Err)
		}
	}
	if n := a.requests.Load(); n != 2 {
		t.Errorf("%d requests, want none while down", n-2)
	}
}

// slowBatch answers after its context ends, as an adapter that swallows
// its deadline does: found records for op-00, none for the others.
type slowBatch struct{ batchAdapter }

func (s *slowBatch) LookupBatch(ctx context.Context, qs []providers.Query) ([]providers.BatchAnswer, error) {
	<-ctx.Done()
	out := make([]providers.BatchAnswer, len(qs))
	out[0].Records = []providers.Record{recordFor(qs[0].OpKey)}
	out[1].Err = providers.Permanent(errors.New("HTTP 400"))
	return out, nil
}

func TestLookupManyTimeout(t *testing.T) {
	t.Parallel()
	p := providers.NewProvider("orders", "http", &slowBatch{batchAdapter{max: 10}}, limits(50*time.Millisecond))
	rs := p.LookupMany(t.Context(), queries(3))
	if rs[0].Err != nil || len(rs[0].Records) != 1 {
		t.Errorf("records found, if late, stand as a single lookup's do: %+v", rs[0])
	}
	for _, r := range rs[1:] {
		if class, _ := providers.Classify(r.Err); class != providers.ClassTransient || !strings.Contains(r.Err.Error(), "lookup_timeout") {
			t.Errorf("an answer past lookup_timeout = %+v; want transient, never none nor permanent", r)
		}
	}

	blocked := &batchAdapter{max: 10}
	p = providers.NewProvider("orders", "http", lookupErrBatch{blocked}, limits(50*time.Millisecond))
	for i, r := range p.LookupMany(t.Context(), queries(3)) {
		if class, _ := providers.Classify(r.Err); class != providers.ClassTransient {
			t.Errorf("result %d of a request past its deadline = %v; want transient", i, r.Err)
		}
	}
}

// lookupErrBatch fails the request with its context's error.
type lookupErrBatch struct{ *batchAdapter }

func (lookupErrBatch) LookupBatch(ctx context.Context, _ []providers.Query) ([]providers.BatchAnswer, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestLookupManyMalformedRequestAskedOneByOne: a request whose answer is
// malformed as a whole (a row for an op_key not asked, as a provider that
// lower-cases keys gives for "Op-03") is asked again one operation at a
// time: the others are answered, only the one at fault fails, and provider
// health counts no failure: the provider answered every request, if not
// readably for op-03.
func TestLookupManyMalformedRequestAskedOneByOne(t *testing.T) {
	t.Parallel()
	a := &batchAdapter{max: 4, answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
		for _, q := range qs {
			if q.OpKey == "op-03" {
				return nil, providers.Malformed(errors.New("a row for an op_key that was not asked"))
			}
		}
		return eachFound(qs)
	}}
	h := &fakeHealth{}
	p := providers.NewProvider("orders", "http", a, limits(time.Second))
	p.SetHealth(h)
	results := p.LookupMany(t.Context(), queries(4))
	for i, r := range results {
		if bad := i == 3; (r.Err != nil) != bad || (!bad && len(r.Records) != 1) {
			t.Errorf("result %d = %+v; want an error only for op-03", i, r)
		}
	}
	if n := a.requests.Load(); n != 5 {
		t.Errorf("%d requests, want 5: the batch, then one per operation", n)
	}
	failures := 0
	for _, d := range h.dones {
		if strings.HasSuffix(d, "failed=true") {
			failures++
		}
	}
	if failures != 0 || len(h.dones) != 5 {
		t.Errorf("health saw %d failures (%q), want 5 answers and none: a malformed answer is no failure of the provider", failures, h.dones)
	}
}
