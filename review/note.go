package review

import (
	"context"
	"fmt"
	"slices"
)

// ownKinds are the events that change a ticket: only review writes them,
// with the change, through [Store.Apply], [Store.Resolve],
// [Store.Acknowledge], [Store.Reassign], [Store.AddNote], [Store.Escalate], [Store.ResolveByRelookup] and
// [Store.RecordContradiction].
var ownKinds = []string{EventOpened, EventEscalated, EventAcknowledged, EventResolved, EventResolvedByRelookup, EventContradicted,
	EventReassigned, EventNoted, EventAckTimedOut}

// EventSilenceEnded is the event [Store.Note] records on an open ticket
// when a silence that held its notifications ends: its message is the
// ticket's current state, once per ticket and silence (the silence's id is
// the event's instance).
const EventSilenceEnded = "silence_ended"

// Note appends to ticket id's audit trail an event of kind that changes
// nothing about the ticket but is news about it from outside review (its
// Slack message was removed), with details, once per kind and instance:
// its dedupe key is [EventKey](id, kind, instance). It reports whether the
// event is new. Over a Store on a transaction it writes in that
// transaction. It refuses review's own kinds, which go with the change
// they record, and a ticket that does not exist.
func (s *Store) Note(ctx context.Context, id int64, kind, instance string, details any) (bool, error) {
	if kind == "" || slices.Contains(ownKinds, kind) {
		return false, fmt.Errorf("%w: %q is not an event kind to note; a ticket's own changes record their events", ErrInvalidRequest, kind)
	}
	n, err := appendEvents(ctx, s.db, newEvent{ticketID: id, kind: kind, actor: ActorSweeper, details: details,
		key: EventKey(id, kind, instance)})
	if err != nil {
		return false, fmt.Errorf("note the %s event of ticket %d: %w", kind, id, err)
	}
	return n == 1, nil
}
