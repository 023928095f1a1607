package testwait

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatal instead of ending the
// test, so the helper's own failure can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...) }

func TestUntilReturnsOnceMet(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	Until(t, 5*time.Second, "the third call", func() bool { return calls.Add(1) == 3 })
	if calls.Load() != 3 {
		t.Errorf("cond called %d times, want 3", calls.Load())
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("took %s for a condition met on the third poll", elapsed)
	}
}

func TestUntilFailsNamingWhatAndTime(t *testing.T) {
	r := &recorder{TB: t}
	Until(r, 30*time.Millisecond, "the moon", func() bool { return false })
	if !strings.HasPrefix(r.failed, "the moon: not within 30ms (waited ") || !strings.HasSuffix(r.failed, "ms)") {
		t.Errorf("failure %q, want it to name what and the time waited", r.failed)
	}
}

func TestUntilNilCarriesTheLastError(t *testing.T) {
	r := &recorder{TB: t}
	n := 0
	UntilNil(r, 20*time.Millisecond, "rows settled", func() error {
		n++
		return fmt.Errorf("%d pending", n)
	})
	if want := fmt.Sprintf(": %d pending", n); !strings.HasSuffix(r.failed, want) {
		t.Errorf("failure %q, want it to end with the last error %q", r.failed, want)
	}
}
