package notify

import (
	"testing"
	"time"
)

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 5: 32 * time.Second, 12: 10 * time.Minute, 100: 10 * time.Minute} {
		for range 20 {
			if got := defaultBackoff(attempt); got < want/2 || got > want {
				t.Errorf("defaultBackoff(%d) = %s, want between %s and %s", attempt, got, want/2, want)
			}
		}
	}
}

// TestRetryAfter: a receiver's Retry-After in seconds or as an HTTP date,
// capped at 10 minutes — a huge value neither overflows into a negative
// wait nor parks the row for years — and the fallback when unreadable.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"7":                             7 * time.Second,
		" 120 ":                         2 * time.Minute,
		"99999999999999":                10 * time.Minute,
		"Tue, 01 Dec 2026 10:00:30 GMT": 30 * time.Second,
		"Tue, 01 Dec 2026 09:00:00 GMT": 0,
		"":                              5 * time.Second,
		"-3":                            5 * time.Second,
		"soon":                          5 * time.Second,
	} {
		if got := RetryAfter(h, now, 5*time.Second); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}
