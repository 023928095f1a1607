package providers_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// outHealth is a provider's health that can take it down until a time.
type outHealth struct {
	fakeHealth
	mu    sync.Mutex
	until []time.Time
}

func (h *outHealth) DownUntil(_ context.Context, until time.Time, detail string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until = append(h.until, until)
	return nil
}

// outAdapter answers every lookup with the provider out until a time.
type outAdapter struct{ until time.Time }

func (a outAdapter) Lookup(context.Context, providers.Query) ([]providers.Record, error) {
	return nil, providers.OutUntil(a.until, errors.New("HTTP 429: the daily call limit is reached"))
}

// TestOutUntilIsTheProvidersOutage: an adapter's answer that the provider
// refuses everyone until a time (a day's quota spent) takes the provider
// down until that time — hours away, not cut to the hour a 429's wait is
// held to — in one report, and is reported as no operation's failure; for
// the operation it is transient, never rate limited (its budget goes on,
// and the provider's outage holds its next try).
func TestOutUntilIsTheProvidersOutage(t *testing.T) {
	t.Parallel()
	until := time.Now().Add(9 * time.Hour).Truncate(time.Second)
	h := &outHealth{}
	p := providers.NewProvider("xero", "xero", outAdapter{until: until}, limits(time.Minute))
	p.SetHealth(h)
	_, err := p.Lookup(t.Context(), query)
	if class, _ := providers.Classify(err); class != providers.ClassTransient {
		t.Fatalf("Lookup = %v (%s); want a transient error", err, class)
	}
	if got, ok := providers.OutUntilOf(err); !ok || !got.Equal(until) {
		t.Errorf("OutUntilOf = %s, %v; want %s", got, ok, until)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if fmt.Sprint(h.until) != fmt.Sprint([]time.Time{until}) {
		t.Errorf("DownUntil got %v, want once, %s", h.until, until)
	}
	if len(h.dones) != 0 {
		t.Errorf("reported to health as %q; want no operation's failure", h.dones)
	}
}

// TestRetryAfterWithin: a Retry-After is read up to the bound given — a
// day for a provider out for the day — where RetryAfter holds any 429 to
// an hour.
func TestRetryAfterWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header string
		most   time.Duration
		want   time.Duration
		ok     bool
	}{
		{"36000", 24 * time.Hour, 10 * time.Hour, true},
		{"36000", time.Hour, time.Hour, true},
		{"999999999999", 24 * time.Hour, 24 * time.Hour, true},
		{"soon", 24 * time.Hour, time.Second, false},
	} {
		if got, ok := providers.RetryAfterWithin(tc.header, tc.most); got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfterWithin(%q, %s) = %s, %v; want %s, %v", tc.header, tc.most, got, ok, tc.want, tc.ok)
		}
	}
	if got := providers.RetryAfter("36000"); got != time.Hour {
		t.Errorf("RetryAfter(36000) = %s, want an hour", got)
	}
}
