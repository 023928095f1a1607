package outbox

import (
	"strings"
	"testing"
)

// TestNotParkedSaysWhetherTheRowIsFinal: replaying or dismissing a row
// that is not parked says why, and a skipped row (like every other state
// but pending) says it is final: nothing will send it.
func TestNotParkedSaysWhetherTheRowIsFinal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ state, want string }{
		{StateSkipped, "skipped rows are final"},
		{StateSkipped, "nothing will send it"},
		{StateSent, "sent rows are final"},
		{StateDismissed, "dismissed rows are final"},
		{StateFolded, "folded rows are final"},
		{StateSilenced, "silenced rows are final"},
		{StatePending, "the next notify pass delivers it"},
	} {
		if got := notParkedReason(tc.state); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.state, got, tc.want)
		}
	}
}
