package app_test

import (
	"strings"
	"testing"
	"time"
)

// TestAuditWaitsOnlyForLookupsBehind: an audited provider's audit waits
// for its pending operations only once they have waited past two of the
// sweep's periods after going stale (settle.Auditor.Behind), so that the
// operations of a provider with traffic, always some of them waiting for
// the next sweep, do not hold its audit back for good.
func TestAuditWaitsOnlyForLookupsBehind(t *testing.T) {
	for _, c := range []struct {
		schedule string
		want     time.Duration
	}{
		{"", 10 * time.Minute}, // the default, every five minutes
		{"\n[schedules]\nsweep = \"@every 30s\"\n", time.Minute},
	} {
		cfg := strings.Replace(baseConfig, "simulated = true", "simulated = true\naudit = true", 1) + c.schedule
		b := wire(t, "postgres://unused", cfg, nil)
		a := b.sweeper.Auditor()
		if _, ok := a.Policies["sim"]; !ok || a.Behind == nil {
			t.Fatalf("schedule %q: the audit has no policy for sim, or no Behind", c.schedule)
		}
		if got := a.Behind(); got != c.want {
			t.Errorf("schedule %q: the audit's Behind is %s, want %s", c.schedule, got, c.want)
		}
	}
}
