package review

import (
	"context"
	"fmt"
	"slices"

	"github.com/sweeper/sweeper/ledger"
)

// ownKinds are the events that change a ticket: only review writes them,
// with the change, through [Store.Apply], [Store.Resolve],
// [Store.Acknowledge], [Store.Reassign], [Store.AddNote], [Store.Escalate], [Store.ResolveByRelookup] and
// [Store.RecordContradiction].
var ownKinds = []string{EventOpened, EventEscalated, EventAcknowledged, EventResolved, EventResolvedByRelookup, EventContradicted,
	EventReassigned, EventNoted, EventAckTimedOut}

// EventSilenceEnded is the event [Notes.Note] records on an open ticket
// when a silence that held its notifications ends: its message is the
// ticket's current state, once per ticket and silence (the silence's id is
// the event's instance).
const EventSilenceEnded = "silence_ended"

// Notes writes events on tickets from outside review and nothing of the
// ledger: it has no method that could read or write an operation, so it
// needs no ledger table (notify's outbox and silences use it).
type Notes struct {
	db ledger.DB
}

// NewNotes returns the ticket-only event writer over db: a pool, or a
// transaction to write in.
func NewNotes(db ledger.DB) *Notes { return &Notes{db: db} }

// Note appends to ticket id's audit trail an event of kind that changes
// nothing about the ticket but is news about it from outside review (its
// Slack message was removed), with details, once per kind and instance:
// its dedupe key is [EventKey](id, kind, instance). It reports whether the
// event is new. Over a transaction it writes in that
// transaction. It refuses review's own kinds, which go with the change
// they record, and a ticket that does not exist.
func (s *Notes) Note(ctx context.Context, id int64, kind, instance string, details any) (bool, error) {
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

// Note is [Notes.Note] over s's database.
func (s *Store) Note(ctx context.Context, id int64, kind, instance string, details any) (bool, error) {
	return NewNotes(s.db).Note(ctx, id, kind, instance, details)
}
