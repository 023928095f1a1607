package twilio

import "github.com/sweeper/sweeper/providers"

// messageStates is Twilio's state machine for an outbound Message, read
// onto sweeper's states: the status values Twilio documents for the
// Message resource ("Message status values", Messaging API reference).
//
//   - queued, accepted, sending, sent, delivered, read: Twilio took the
//     message to send (accepted and queued are before the carrier, the rest
//     after); the effect a workflow asked for. partially_delivered: some
//     segment reached the handset — an effect, for a person to judge if
//     the payload says otherwise.
//   - scheduled: held by a Messaging Service until its send time; it may
//     still be cancelled.
//   - failed (never reached the carrier), undelivered (the carrier gave
//     up), canceled (a scheduled message cancelled): the attempt, not the
//     effect.
//
// receiving and received belong to inbound messages, which are no
// candidate at all ([outbound]). A status not in this table is a malformed
// answer, never proof.
var messageStates = map[string]providers.State{
	"queued":              providers.StateEffect,
	"accepted":            providers.StateEffect,
	"sending":             providers.StateEffect,
	"sent":                providers.StateEffect,
	"delivered":           providers.StateEffect,
	"read":                providers.StateEffect,
	"partially_delivered": providers.StateEffect,
	"scheduled":           providers.StateInFlight,
	"failed":              providers.StateFailed,
	"undelivered":         providers.StateFailed,
	"canceled":            providers.StateFailed,
}

// inboundStatuses are the statuses of a message sent to the account's
// number: never an attempt of a workflow's, whatever its direction says.
var inboundStatuses = map[string]bool{"receiving": true, "received": true}

// outbound are the directions Twilio documents for a message the account
// sent: by the API, during a call, in reply to an incoming message.
// "inbound" is a message to the account's number — an inbound message to
// the ledger's recipient is not an attempt to reach it.
var outbound = map[string]bool{"outbound-api": true, "outbound-call": true, "outbound-reply": true}
