package postmark

import "github.com/sweeper/sweeper/providers"

// messageStates is Postmark's state machine for an outbound message, read
// onto the state the decision uses, by the message's Status in any letter
// case. Postmark documents queued, sent and processed for its outbound
// message search (the status filter of GET /messages/outbound):
//
//   - Sent, Processed: Postmark handed the message on — the effect.
//   - Queued: Postmark accepted the message and holds it to send — the
//     effect, as a provider that queued a message took it (Twilio's
//     queued likewise).
//   - Bounced, Failed, Blocked: the words Postmark uses for a message it
//     did not deliver (its activity and its inbound statuses) — a failed
//     attempt, never proof, should an outbound message carry one.
//
// A bounce after sending is kept in Postmark's Bounces API, which is not
// searched: a Sent message may still have bounced. A status not in this
// table is a malformed answer.
var messageStates = map[string]providers.State{
	"sent":      providers.StateEffect,
	"processed": providers.StateEffect,
	"queued":    providers.StateEffect,
	"bounced":   providers.StateFailed,
	"failed":    providers.StateFailed,
	"blocked":   providers.StateFailed,
}
