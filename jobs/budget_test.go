package jobs_test

import (
	"testing"
	"time"

	"github.com/sweeper/sweeper/jobs"
)

// TestDownCreditIsCapped: an outage extends an operation's lookup budget
// by its length up to MaxDownCredit and no further, so that an operation
// whose own lookups keep its provider down ends in a ticket rather than
// waiting forever.
func TestDownCreditIsCapped(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ down, want time.Duration }{
		{-time.Second, 0}, // a clock read out of order: no credit
		{0, 0},
		{45 * time.Second, 45 * time.Second},
		{jobs.MaxDownCredit, jobs.MaxDownCredit},
		{jobs.MaxDownCredit + time.Second, jobs.MaxDownCredit},
		{30 * 24 * time.Hour, jobs.MaxDownCredit},
	} {
		if got := jobs.DownCredit(tt.down); got != tt.want {
			t.Errorf("DownCredit(%s) = %s, want %s", tt.down, got, tt.want)
		}
	}
}
