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
