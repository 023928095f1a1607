package hubspot

import (
	"testing"

	"github.com/sweeper/sweeper/providers"
)

// TestStateOf: only a live record is the effect.
func TestStateOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		archived bool
		state    providers.State
		status   string
	}{
		{false, providers.StateEffect, "live"},
		{true, providers.StateReversed, "archived"},
	} {
		if state, status := stateOf(tc.archived); state != tc.state || status != tc.status {
			t.Errorf("stateOf(%v) = %s, %s; want %s, %s", tc.archived, state, status, tc.state, tc.status)
		}
	}
}
