package gcal

import "github.com/sweeper/sweeper/providers"

// eventStates is Google Calendar's state machine for an event, read onto
// the state the decision uses, by the event's status. Google documents
// three values:
//
//   - confirmed: the event is booked — the effect.
//   - tentative: the event is booked and marked tentatively confirmed by its
//     organizer — the effect too: the event exists on the calendar, and
//     booking it again would put the meeting there twice. It is no state
//     of the creation in progress (events.insert answers with the event).
//   - cancelled: the event was deleted or cancelled after it was made — a
//     reversed effect, never proof. A deleted event listed with
//     showDeleted=true may carry only its id and status.
//
// A status not in this table, or none, is a malformed answer.
var eventStates = map[string]providers.State{
	"confirmed": providers.StateEffect,
	"tentative": providers.StateEffect,
	"cancelled": providers.StateReversed,
}
