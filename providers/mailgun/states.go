package mailgun

import (
	"fmt"
	"slices"

	"github.com/sweeper/sweeper/providers"
)

// stateOf is Mailgun's state machine for a message to one recipient, read
// from the events the adapter searches (Mailgun's "Events" documentation:
// accepted, rejected, delivered, failed with severity permanent or
// temporary) onto the state the decision uses:
//
//	failed, severity permanent (suppress-bounce, bounce,
//	  old, …), whatever else was seen                  failed: Mailgun gave up
//	rejected                                           failed: Mailgun refused the send
//	delivered                                          the effect
//	failed, severity temporary, and not delivered      in flight: Mailgun retries
//	accepted                                           the effect: Mailgun took the message
//
// status is the event that decided it, Mailgun's word. A severity other
// than permanent or temporary is an error: a malformed answer.
func stateOf(m *message) (state providers.State, status string, err error) {
	switch m.severity {
	case "", "permanent", "temporary":
	default:
		return "", "", fmt.Errorf("a failed event's severity %q is neither permanent nor temporary", providers.Word(m.severity, 32))
	}
	has := func(name string) bool { return slices.Contains(m.events, name) }
	switch {
	case m.severity == "permanent":
		return providers.StateFailed, "failed", nil
	case has("rejected"):
		return providers.StateFailed, "rejected", nil
	case has("delivered"):
		return providers.StateEffect, "delivered", nil
	case m.severity == "temporary":
		return providers.StateInFlight, "failed", nil
	case has("accepted"):
		return providers.StateEffect, "accepted", nil
	}
	return "", "", fmt.Errorf("no event says where the message stands")
}
