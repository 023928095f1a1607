package providers_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/providers"
)

// TestLookupMetrics: each call to the adapter is observed once, under the
// result the caller gets — records counted, or the error's class — and a
// call the caller gave up on is not observed at all.
func TestLookupMetrics(t *testing.T) {
	t.Parallel()
	record := providers.Record{ID: "rec_1"}
	for _, tc := range []struct {
		desc   string
		answer lookupFunc
		// timeout is lookup_timeout, for the case that outlasts it; the
		// others get one no loaded machine outlasts.
		timeout time.Duration
		want    string
	}{
		{desc: "one record", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return []providers.Record{record}, nil
		}, want: metrics.LookupFound},
		{desc: "two records", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return []providers.Record{record, {ID: "rec_2"}}, nil
		}, want: metrics.LookupMultiple},
		{desc: "searched, nothing", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return nil, nil
		}, want: metrics.LookupNotFound},
		{desc: "unclassified error", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return nil, errors.New("connection reset")
		}, want: metrics.LookupTransient},
		{desc: "rate limited", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return nil, providers.RateLimited(time.Second, errors.New("429"))
		}, want: metrics.LookupRateLimited},
		{desc: "permanent", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return nil, providers.Permanent(errors.New("401"))
		}, want: metrics.LookupPermanent},
		{desc: "unsupported", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return nil, providers.ErrUnsupported
		}, want: metrics.LookupUnsupported},
		{desc: "a panic", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			panic("adapter bug")
		}, want: metrics.LookupTransient},
		{desc: "a record without an id", answer: func(context.Context, providers.Query) ([]providers.Record, error) {
			return []providers.Record{{}}, nil
		}, want: metrics.LookupTransient},
		{desc: "no answer within lookup_timeout", timeout: 20 * time.Millisecond,
			answer: func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
				<-ctx.Done()
				return nil, nil // swallowed its deadline: still not "not found"
			}, want: metrics.LookupTransient},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			m, err := metrics.New(reg, nil)
			if err != nil {
				t.Fatal(err)
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			p := providers.NewProvider("mailer", "fake", tc.answer, limits(timeout))
			p.SetMetrics(m)
			_, _ = p.Lookup(context.Background(), query)
			want := map[string]float64{"provider=mailer,result=" + tc.want: 1}
			if diff := cmp.Diff(want, metricstest.Values(t, reg, "sweeper_lookup_duration_seconds")); diff != "" {
				t.Errorf("lookups (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("the caller gave up", func(t *testing.T) {
		t.Parallel()
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		p := providers.NewProvider("mailer", "fake", lookupFunc(func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}), limits(time.Second))
		p.SetMetrics(m)
		if _, err := p.Lookup(ctx, query); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want the caller's cancellation", err)
		}
		if got := metricstest.Values(t, reg, "sweeper_lookup_duration_seconds"); len(got) != 0 {
			t.Errorf("a cancelled call was observed: %v", got)
		}
	})

	t.Run("the duration is the adapter's, not the wait for a slot", func(t *testing.T) {
		t.Parallel()
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		var inAdapter atomic.Int64 // nanoseconds spent in the adapter, all calls
		p := providers.NewProvider("mailer", "fake", lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
			start := time.Now()
			time.Sleep(100 * time.Millisecond)
			inAdapter.Add(int64(time.Since(start)))
			return nil, nil
		}), providers.Limits{StaleAfter: time.Minute, LookupTimeout: 5 * time.Second, LookupBudget: time.Hour, RateLimit: 1000, Concurrency: 1})
		p.SetMetrics(m)
		done := make(chan struct{})
		for range 3 {
			go func() {
				defer func() { done <- struct{}{} }()
				_, _ = p.Lookup(context.Background(), query)
			}()
		}
		for range 3 {
			<-done
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		var count uint64
		for _, f := range families {
			if f.GetName() == "sweeper_lookup_duration_seconds" {
				for _, m := range f.GetMetric() {
					sum += m.GetHistogram().GetSampleSum()
					count += m.GetHistogram().GetSampleCount()
				}
			}
		}
		// Three calls one at a time spend at least 0.3s in the adapter;
		// counting the waits for the slot would add at least as much again
		// for the calls that queued.
		adapter := time.Duration(inAdapter.Load()).Seconds()
		if count != 3 || sum < adapter || sum > adapter+0.2 {
			t.Errorf("%d observations summing %.3fs, want 3 summing the %.3fs spent in the adapter", count, sum, adapter)
		}
	})
}
