package app

import (
	"testing"
	"time"
)

// TestLongestGap: the audit's Behind comes from the sweep's schedule, the
// longest wait between two of its runs.
func TestLongestGap(t *testing.T) {
	now := time.Date(2026, 3, 4, 10, 7, 30, 0, time.UTC)
	for _, c := range []struct {
		expr string
		want time.Duration
	}{
		{"*/5 * * * *", 5 * time.Minute},
		{"@every 30s", 30 * time.Second},
		{"0 9,17 * * *", 16 * time.Hour},
		{"CRON_TZ=Europe/Paris 0 0 * * *", 24 * time.Hour}, // the night of 29 March, 23h, is not the longest
		{"0 0 30 2 *", 0},
		{"not cron", 0},
	} {
		if got := longestGap(c.expr, now); got != c.want {
			t.Errorf("longestGap(%q) = %s, want %s", c.expr, got, c.want)
		}
	}
}
