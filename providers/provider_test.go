package providers_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// lookupFunc is a hand-written adapter: each test says how it answers.
type lookupFunc func(ctx context.Context, q providers.Query) ([]providers.Record, error)

func (f lookupFunc) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	return f(ctx, q)
}

// limits are generous enough that only the timeout under test matters.
func limits(timeout time.Duration) providers.Limits {
	return providers.Limits{
		StaleAfter:    time.Minute,
		LookupTimeout: timeout,
		LookupBudget:  time.Hour,
		RateLimit:     1000,
		Concurrency:   4,
	}
}

var query = providers.Query{
	OpKey:       "op-1",
	Recipient:   "jane.doe@example.com",
	Action:      "send_email",
	PayloadHash: "abc",
	Since:       time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
	Until:       time.Date(2024, 5, 1, 11, 0, 0, 0, time.UTC),
}

func TestNewProvider(t *testing.T) {
	t.Parallel()

	p := providers.NewProvider("orders", "http", lookupFunc(nil), providers.Limits{
		StaleAfter: time.Minute, LookupTimeout: 2 * time.Second, LookupBudget: time.Hour, RateLimit: 5, Concurrency: 3,
	})
	lim := p.Limits()
	got := []any{p.Name, p.Kind, lim.StaleAfter, lim.LookupTimeout, lim.LookupBudget}
	want := []any{"orders", "http", time.Minute, 2 * time.Second, time.Hour}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewProvider fields (-want +got):\n%s", diff)
	}
}

func TestProviderLookup(t *testing.T) {
	t.Parallel()

	records := []providers.Record{{ID: "r1", PayloadHash: strings.Repeat("a", 64)}, {ID: "r2"}}

	tests := []struct {
		desc    string
		adapter lookupFunc
		// pastTimeout gives the case a lookup_timeout short enough to pass:
		// the others have one no loaded machine outlasts, so what they
		// answer is in time.
		pastTimeout bool
		wantRecords []providers.Record
		wantErr     bool
		wantClass   providers.Class
		wantDelay   time.Duration
		wantMsg     string // a substring of the error message
	}{
		{
			desc:        "records in time pass through",
			adapter:     func(context.Context, providers.Query) ([]providers.Record, error) { return records, nil },
			wantRecords: records,
		},
		{
			desc:    "empty answer in time is not found",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) { return nil, nil },
		},
		{
			desc: "blocks until its deadline is transient",
			adapter: func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			pastTimeout: true, wantErr: true, wantClass: providers.ClassTransient, wantMsg: "lookup_timeout",
		},
		{
			desc: "permanent error after the deadline is transient",
			adapter: func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
				<-ctx.Done() // then answers as if it had not seen the deadline
				return nil, providers.Permanent(errors.New("HTTP 400"))
			},
			pastTimeout: true, wantErr: true, wantClass: providers.ClassTransient, wantMsg: "lookup_timeout",
		},
		{
			desc: "swallowed deadline with nil records is not an empty success",
			adapter: func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
				<-ctx.Done()
				return nil, nil
			},
			pastTimeout: true, wantErr: true, wantClass: providers.ClassTransient, wantMsg: "lookup_timeout",
		},
		{
			desc: "swallowed deadline with an empty slice is not an empty success",
			adapter: func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
				<-ctx.Done()
				return []providers.Record{}, nil
			},
			pastTimeout: true, wantErr: true, wantClass: providers.ClassTransient, wantMsg: "lookup_timeout",
		},
		{
			desc: "panicking adapter is transient",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				panic("nil map")
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "panicked",
		},
		{
			desc: "adapter panicking with a classified error is still transient",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				panic(providers.Permanent(errors.New("HTTP 401")))
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "panicked",
		},
		{
			desc: "record without an id is transient",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "r1"}, {PayloadHash: "abc"}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "record 1: malformed provider record id: empty",
		},
		{
			desc: "record whose id is blank is transient",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: " \t"}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "record 0: malformed provider record id",
		},
		{
			desc: "an id with surrounding space is malformed, not trimmed into another id",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "rec-W "}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "white space around it",
		},
		{
			desc: "a decomposed id is malformed: one canonical form",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "cafe\u0301"}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "NFC",
		},
		{
			desc: "an id holding NUL is malformed, not a write that fails forever",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "rec\x00W"}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "control character",
		},
		{
			desc: "an id past the index limit is malformed",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: strings.Repeat("r", 3000)}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "more than 512",
		},
		{
			desc: "a payload hash holding NUL is malformed",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "r1", PayloadHash: strings.Repeat("a", 63) + "\x00"}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "payload hash",
		},
		{
			desc: "a recipient holding NUL is malformed",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "r1", Recipient: "a\x00b"}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "recipient",
		},
		{
			desc: "one id with two contents is malformed",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "r1", Recipient: "a@example.com"}, {ID: "r1", Recipient: "b@example.com"}}, nil
			},
			wantErr: true, wantClass: providers.ClassTransient, wantMsg: "same id",
		},
		{
			desc: "the same record listed twice counts once",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return []providers.Record{{ID: "r1", Recipient: "a@example.com"}, {ID: "r1", Recipient: "a@example.com"}}, nil
			},
			wantRecords: []providers.Record{{ID: "r1", Recipient: "a@example.com"}},
		},
		{
			desc: "unsupported passes through",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return nil, providers.ErrUnsupported
			},
			wantErr: true, wantClass: providers.ClassUnsupported,
		},
		{
			desc: "unsupported after the deadline passes through",
			adapter: func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
				<-ctx.Done()
				return nil, providers.ErrUnsupported
			},
			pastTimeout: true, wantErr: true, wantClass: providers.ClassUnsupported,
		},
		{
			desc: "rate limited keeps its delay",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return nil, providers.RateLimited(7*time.Second, errors.New("HTTP 429"))
			},
			wantErr: true, wantClass: providers.ClassRateLimited, wantDelay: 7 * time.Second,
		},
		{
			desc: "permanent in time stays permanent, records dropped",
			adapter: func(context.Context, providers.Query) ([]providers.Record, error) {
				return records, providers.Permanent(errors.New("HTTP 401"))
			},
			wantErr: true, wantClass: providers.ClassPermanent,
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			timeout := time.Hour
			if tt.pastTimeout {
				timeout = 50 * time.Millisecond
			}
			p := providers.NewProvider("orders", "test", tt.adapter, limits(timeout))

			got, err := p.Lookup(t.Context(), query)

			if diff := cmp.Diff(tt.wantRecords, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %t", err, tt.wantErr)
			}
			if err == nil {
				return
			}
			if class, delay := providers.Classify(err); class != tt.wantClass || delay != tt.wantDelay {
				t.Errorf("Classify(%v) = %s, %s; want %s, %s", err, class, delay, tt.wantClass, tt.wantDelay)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
}

// TestProviderLookupCallerCancelled: the caller giving up is not the
// provider's answer, so its ctx error comes back unclassified.
func TestProviderLookupCallerCancelled(t *testing.T) {
	t.Parallel()

	blockOnCtx := func(started chan<- struct{}) lookupFunc {
		return func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	tests := []struct {
		desc string
		// run calls Lookup and returns its error; it may cancel ctx itself.
		run     func(t *testing.T) error
		wantErr error
	}{
		{
			desc: "cancelled before the call",
			run: func(t *testing.T) error {
				var calls atomic.Int64
				p := providers.NewProvider("orders", "test", lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
					calls.Add(1)
					return nil, nil
				}), limits(time.Hour))
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				_, err := p.Lookup(ctx, query)
				if n := calls.Load(); n != 0 {
					t.Errorf("adapter called %d times after the caller gave up, want 0", n)
				}
				return err
			},
			wantErr: context.Canceled,
		},
		{
			desc: "cancelled while the adapter runs",
			run: func(t *testing.T) error {
				started := make(chan struct{}, 1)
				p := providers.NewProvider("orders", "test", blockOnCtx(started), limits(time.Hour))
				_, err := p.Lookup(testwait.CancelWhen(t, started), query)
				return err
			},
			wantErr: context.Canceled,
		},
		{
			desc: "caller's deadline passes before lookup_timeout",
			run: func(t *testing.T) error {
				started := make(chan struct{}, 1)
				p := providers.NewProvider("orders", "test", blockOnCtx(started), limits(time.Hour))
				_, err := p.Lookup(testwait.DeadlineWhen(t, started), query)
				return err
			},
			wantErr: context.DeadlineExceeded,
		},
		{
			desc: "cancelled while waiting for a slot",
			run: func(t *testing.T) error {
				started := make(chan struct{}, 1)
				lim := limits(time.Hour)
				lim.Concurrency = 1
				p := providers.NewProvider("orders", "test", blockOnCtx(started), lim)

				holderCtx, stopHolder := context.WithCancel(t.Context())
				holderDone := make(chan struct{})
				go func() {
					defer close(holderDone)
					p.Lookup(holderCtx, query) //nolint:errcheck // only holds the slot
				}()
				<-started // the one slot is taken

				// The slot stays taken whether the deadline passes before
				// the wait for it or during it: nothing races.
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
				defer cancel()
				_, err := p.Lookup(ctx, query)
				stopHolder()
				<-holderDone
				return err
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			err := tt.run(t)
			if err != tt.wantErr { //nolint:errorlint // the bare ctx error, unwrapped and unclassified
				t.Errorf("err = %#v, want exactly %v", err, tt.wantErr)
			}
			var classified *providers.Error
			if errors.As(err, &classified) {
				t.Errorf("err = %v is a classified provider error; the caller's cancellation is not the provider's answer", err)
			}
		})
	}
}

func TestProviderConcurrencyCap(t *testing.T) {
	t.Parallel()

	tests := []struct {
		desc        string
		concurrency int
		wantMax     int64
	}{
		{desc: "two slots", concurrency: 2, wantMax: 2},
		{desc: "zero means one", concurrency: 0, wantMax: 1},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var inside, most atomic.Int64
			// The calls stay inside until the cap has been reached once
			// (10s at most), however slowly a loaded machine starts them,
			// then a while more for any call past the cap to come in.
			full := make(chan struct{})
			filled := sync.OnceFunc(func() { close(full) })
			adapter := lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
				n := inside.Add(1)
				defer inside.Add(-1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				if n >= tt.wantMax {
					filled()
				}
				select {
				case <-full:
				case <-time.After(10 * time.Second):
				}
				time.Sleep(30 * time.Millisecond)
				return nil, nil
			})
			lim := limits(time.Minute)
			lim.Concurrency = tt.concurrency
			p := providers.NewProvider("orders", "test", adapter, lim)

			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() {
					if _, err := p.Lookup(t.Context(), query); err != nil {
						t.Errorf("Lookup: %v", err)
					}
				})
			}
			wg.Wait()
			if got := most.Load(); got != tt.wantMax {
				t.Errorf("at most %d lookups inside the adapter at once, want %d", got, tt.wantMax)
			}
		})
	}
}

func TestProviderRateLimit(t *testing.T) {
	t.Parallel()

	lim := limits(time.Minute)
	lim.RateLimit = 20 // burst 20, then one every 50ms
	p := providers.NewProvider("orders", "test", lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
		return nil, nil
	}), lim)

	start := time.Now()
	for i := range 30 {
		if _, err := p.Lookup(t.Context(), query); err != nil {
			t.Fatalf("Lookup %d: %v", i, err)
		}
	}
	// 10 calls past the burst at 20/s take 0.5s; allow for timer slack.
	if elapsed, least := time.Since(start), 450*time.Millisecond; elapsed < least {
		t.Errorf("30 lookups at 20/s took %s, want at least %s", elapsed, least)
	}
}

// TestProviderSetRateLimit: a rate limit raised while the provider runs
// (a configuration reload) lets the next lookup go at once, where the old
// limit would have paced it; the provider reports the new limit.
func TestProviderSetRateLimit(t *testing.T) {
	t.Parallel()

	lim := limits(time.Minute)
	lim.RateLimit = 0.1 // one token, the next in 10s
	p := providers.NewProvider("orders", "test", lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
		return nil, nil
	}), lim)
	if _, err := p.Lookup(t.Context(), query); err != nil {
		t.Fatalf("first Lookup: %v", err)
	}
	p.SetRateLimit(1000)
	if got := p.RateLimit(); got != 1000 {
		t.Errorf("RateLimit() = %g after SetRateLimit(1000)", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := p.Lookup(ctx, query); err != nil {
		t.Errorf("Lookup after SetRateLimit(1000): %v, want it sent", err)
	}
}

// TestProviderRateLimitPastDeadline: a wait for this process's own rate
// limit that would outlast the caller's deadline returns at once, paced —
// the provider was not asked, so it is no failure and no attempt — with
// the limiter's delay, rather than hanging.
func TestProviderRateLimitPastDeadline(t *testing.T) {
	t.Parallel()

	var calls atomic.Int64
	lim := limits(time.Minute)
	lim.RateLimit = 0.1 // one token, the next in 10s
	p := providers.NewProvider("orders", "test", lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
		calls.Add(1)
		return nil, nil
	}), lim)
	if _, err := p.Lookup(t.Context(), query); err != nil {
		t.Fatalf("first Lookup: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := p.Lookup(ctx, query)
	if class, delay := providers.Classify(err); err == nil || class != providers.ClassPaced || delay < 9*time.Second {
		t.Errorf("err = %v (%s, %s), want paced for about 10s", err, class, delay)
	}
	var classified *providers.Error
	if !errors.As(err, &classified) {
		t.Errorf("err = %v, want a classified rate limit error, not the caller's ctx error", err)
	}
	if elapsed := time.Since(start); elapsed > 500*time.Millisecond {
		t.Errorf("second Lookup took %s, want it to fail at once", elapsed)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("adapter called %d times, want 1", n)
	}
}

// closer is an adapter holding something to release.
type closer struct {
	lookupFunc
	closed bool
}

func (c *closer) Close() { c.closed = true }

// TestProviderClose: a provider closes an adapter that holds anything (a
// postgres provider's pool), and closing one that holds nothing is fine.
func TestProviderClose(t *testing.T) {
	t.Parallel()
	c := &closer{lookupFunc: func(context.Context, providers.Query) ([]providers.Record, error) { return nil, nil }}
	providers.NewProvider("db", "test", c, limits(time.Minute)).Close()
	if !c.closed {
		t.Error("the adapter was not closed")
	}
	providers.NewProvider("http", "test", lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
		return nil, nil
	}), limits(time.Minute)).Close()
}

// TestSetLimitsWhileLookupsRun changes a provider's limits while its
// lookups run (under the race detector): a request admitted keeps the slot
// it took and the timeout it started under, the next request is admitted by
// the new concurrency and runs under the new timeout.
func TestSetLimitsWhileLookupsRun(t *testing.T) {
	t.Parallel()
	// entered gets the time each request has left under its timeout.
	entered, release := make(chan time.Duration), make(chan struct{})
	p := providers.NewProvider("orders", "http", lookupFunc(func(ctx context.Context, q providers.Query) ([]providers.Record, error) {
		deadline, _ := ctx.Deadline()
		entered <- time.Until(deadline)
		<-release
		return nil, nil
	}), providers.Limits{LookupTimeout: 100 * time.Millisecond, LookupBudget: time.Hour, RateLimit: 1000, Concurrency: 1})
	first, second := make(chan error, 1), make(chan error, 1)
	lookup := func(done chan<- error) {
		_, err := p.Lookup(context.Background(), query)
		done <- err
	}
	go lookup(first)
	if left := <-entered; left > 100*time.Millisecond {
		t.Fatalf("the first request has %s left, want at most its lookup_timeout 100ms", left)
	}
	// The one slot is taken.
	if _, err := p.Lookup(context.Background(), query); !isPaced(err) {
		t.Fatalf("a second lookup with one slot busy: %v, want it paced", err)
	}
	lim := p.Limits()
	lim.Concurrency, lim.LookupTimeout = 2, 5*time.Second
	p.SetLimits(lim)
	go lookup(second)
	// Admitted by the new count while the first runs, under the new timeout.
	select {
	case left := <-entered:
		if left <= time.Second {
			t.Errorf("the request after SetLimits has %s left, want lookup_timeout 5s", left)
		}
	case err := <-second:
		close(release)
		t.Fatalf("the request after SetLimits was not admitted: %v", err)
	}
	if got := p.Limits(); got != lim {
		t.Errorf("Limits() = %+v, want %+v", got, lim)
	}
	close(release)
	<-first // past its 100ms: its answer is no answer in time
	if err := <-second; err != nil {
		t.Errorf("the lookup admitted after, under lookup_timeout 5s: %v", err)
	}
}

func isPaced(err error) bool {
	class, _ := providers.Classify(err)
	return err != nil && class == providers.ClassPaced
}
