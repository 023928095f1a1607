package sendgrid

import "github.com/sweeper/sweeper/providers"

// messageStates is SendGrid's state machine for a message, read onto the
// state the decision uses: the status Email Logs gives a message, named
// as SendGrid's delivery events name them (processed, deferred,
// delivered, bounce, dropped, blocked) and as Email Activity does
// (not_delivered).
//
//   - processed: SendGrid took the message to send; delivered: the
//     recipient's server accepted it — the effect.
//   - deferred: the recipient's server put it off and SendGrid retries —
//     in flight.
//   - dropped (SendGrid would not send it: a suppressed address, an
//     invalid one), bounce or bounced, blocked, not_delivered — a failed
//     attempt, returned as evidence, never proof.
//
// A status not in this table is a malformed answer.
var messageStates = map[string]providers.State{
	"processed":     providers.StateEffect,
	"delivered":     providers.StateEffect,
	"deferred":      providers.StateInFlight,
	"not_delivered": providers.StateFailed,
	"dropped":       providers.StateFailed,
	"bounce":        providers.StateFailed,
	"bounced":       providers.StateFailed,
	"blocked":       providers.StateFailed,
}
