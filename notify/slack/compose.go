package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// Composer says what an outbox row's message is. It is called while the
// row is leased, before each post, and reads what it needs (the ticket as
// it is now, the event) through db. The receiver adds the metadata that
// carries the dedupe key itself.
type Composer interface {
	Compose(ctx context.Context, db ledger.DB, n outbox.Notification) (message.Post, error)
}

// ComposerFunc is a function that is a [Composer].
type ComposerFunc func(ctx context.Context, db ledger.DB, n outbox.Notification) (message.Post, error)

// Compose calls f.
func (f ComposerFunc) Compose(ctx context.Context, db ledger.DB, n outbox.Notification) (message.Post, error) {
	return f(ctx, db, n)
}

// TicketComposer turns each ticket's outbox row into its Slack message,
// [message.TicketPost] of the ticket as it is now and the event the row
// delivers. A message the dispatcher posts as a new root
// ([outbox.Notification.NewRoot], and every [outbox.KindRootRemoved]
// event) shows the ticket's current state with the event's own text and
// why it is the root now ([message.NewRootMessage]), as does a row of
// kind "opened" that delivers another event (the current alert a silence's
// end gives a ticket it held from its opening). It reads the ticket
// and the event through Tickets, never from the db it is given.
type TicketComposer struct {
	Tickets review.TicketReader
}

var _ Composer = TicketComposer{}

// Compose implements [Composer].
func (c TicketComposer) Compose(ctx context.Context, _ ledger.DB, n outbox.Notification) (message.Post, error) {
	if c.Tickets == nil {
		return message.Post{}, errors.New("the ticket composer has no ticket reader: set TicketComposer.Tickets")
	}
	t, err := c.Tickets.Ticket(ctx, n.TicketID)
	if err != nil {
		return message.Post{}, err
	}
	var ev proof.Evidence
	if err := json.Unmarshal(t.Evidence, &ev); err != nil {
		return message.Post{}, fmt.Errorf("read the evidence of ticket %d: %w", t.ID, err)
	}
	event, err := c.Tickets.Event(ctx, n.EventID)
	if err != nil {
		return message.Post{}, err
	}
	if n.Kind == outbox.KindRootRemoved {
		// The event is the replacement itself.
		return message.NewRootMessage(message.NewAlert(t, ev), message.Replacement{
			Why: cmp.Or(n.NewRoot, message.NewRootRemoved), DedupeKey: n.DedupeKey,
		}).Post(), nil
	}
	newRoot := n.NewRoot
	if n.Kind == outbox.KindOpened && event.Kind != review.EventOpened && newRoot == "" {
		// The ticket's first alert is a later event's (a silence held its
		// "opened" one): the ticket as it is now, as a new root shows it.
		newRoot = message.NewRootUndelivered
	}
	return message.TicketPost(t, ev, event, n.DedupeKey, newRoot)
}

// GroupComposer is the message of an alert group's row:
// [message.GroupMessage] of the group as it is now. It reads the group's
// tickets through Tickets.
type GroupComposer struct {
	Tickets review.TicketReader
}

var _ Composer = GroupComposer{}

// Compose implements [Composer].
func (c GroupComposer) Compose(ctx context.Context, db ledger.DB, n outbox.Notification) (message.Post, error) {
	if c.Tickets == nil {
		return message.Post{}, errors.New("the alert group composer has no ticket reader: set GroupComposer.Tickets")
	}
	g, err := notify.ReadAlertGroup(ctx, db, c.Tickets, n.GroupID)
	if err != nil {
		return message.Post{}, err
	}
	return message.GroupMessage(g).Post(), nil
}

// IncidentComposer turns an incident's outbox rows into Slack messages
// ([message.IncidentPost]): [outbox.KindIncidentOpened] posts the root;
// [outbox.KindIncidentClosed] edits the root to the incident as it ended
// and replies with the counts. For an hour after the end, the dispatcher
// keeps editing the root and that reply to the counts as the backlog
// settles ([Config.IncidentRefresh]). A closed row posted as a new root
// (the opening never reached Slack, or was removed) is the ended incident's
// root message itself. It counts the provider's tickets through Tickets.
type IncidentComposer struct {
	Tickets review.TicketReader
}

var _ Composer = IncidentComposer{}

// Compose implements [Composer].
func (c IncidentComposer) Compose(ctx context.Context, db ledger.DB, n outbox.Notification) (message.Post, error) {
	if n.IncidentID == 0 {
		return message.Post{}, fmt.Errorf("outbox row %d belongs to no incident", n.ID)
	}
	if c.Tickets == nil {
		return message.Post{}, errors.New("the incident composer has no ticket reader: set IncidentComposer.Tickets")
	}
	in, err := notify.ReadIncident(ctx, db, c.Tickets, n.IncidentID)
	if err != nil {
		return message.Post{}, err
	}
	return message.IncidentPost(in, n.Kind == outbox.KindIncidentOpened || n.NewRoot != ""), nil
}
