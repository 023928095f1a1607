package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

// TicketComposer turns each outbox row into its Slack message from the
// ticket as it is now and the event the row delivers: "opened" posts the
// root message; an escalation, an acknowledgement or a resolution edits the
// root to the ticket's current state and adds a thread reply (broadcast to
// the channel for escalations, so the new owner is pinged). A message the
// dispatcher posts as a new root ([Notification.NewRoot], and every
// KindRootRemoved event) shows the ticket's current state with the event's
// own text and why it is the root now ([NewRootMessage]). It reads the
// ticket and the event through Tickets, never from the db it is given.
type TicketComposer struct {
	Tickets review.TicketReader
}

var _ Composer = TicketComposer{}

// Compose implements [Composer].
func (c TicketComposer) Compose(ctx context.Context, _ ledger.DB, n Notification) (Post, error) {
	p, a, err := c.compose(ctx, n)
	if err != nil || (n.NewRoot == "" && n.Kind != KindRootRemoved) {
		return p, err
	}
	why, event := cmp.Or(n.NewRoot, NewRootRemoved), p.Text
	if n.Kind == KindRootRemoved {
		event = ""
	}
	m := NewRootMessage(a, Replacement{Why: why, Event: event, DedupeKey: n.DedupeKey})
	return Post{Text: m.Text, Blocks: m.Blocks}, nil
}

// compose is row n's message as a reply (the root message for "opened"),
// and the alert it shows.
func (c TicketComposer) compose(ctx context.Context, n Notification) (Post, Alert, error) {
	if c.Tickets == nil {
		return Post{}, Alert{}, errors.New("the ticket composer has no ticket reader: set TicketComposer.Tickets")
	}
	t, err := c.Tickets.Ticket(ctx, n.TicketID)
	if err != nil {
		return Post{}, Alert{}, err
	}
	var ev review.Evidence
	if err := json.Unmarshal(t.Evidence, &ev); err != nil {
		return Post{}, Alert{}, fmt.Errorf("read the evidence of ticket %d: %w", t.ID, err)
	}
	event, err := c.Tickets.Event(ctx, n.EventID)
	if err != nil {
		return Post{}, Alert{}, err
	}
	details := event.Details
	a := NewAlert(t, ev)
	root := RootMessage(a)
	if t.State == review.StateResolved {
		root = ResolvedMessage(a, t.Resolution, t.ResolvedBy, t.ResolutionRecordID)
	}
	edit := &RootEdit{Text: root.Text, Blocks: root.Blocks}

	switch n.Kind {
	case review.EventOpened:
		return Post{Text: root.Text, Blocks: root.Blocks}, a, nil
	case review.EventEscalated:
		var d review.EscalatedDetails
		if err := json.Unmarshal(details, &d); err != nil {
			return Post{}, Alert{}, fmt.Errorf("read the details of escalation event %d: %w", n.EventID, err)
		}
		reply := EscalationReply(a, EscalationEvent{Kind: d.Step, FromLevel: d.FromLevel, ToLevel: d.ToLevel,
			Repeat: d.Repeat, DedupeKey: n.DedupeKey})
		return Post{Text: reply.Text, Blocks: reply.Blocks, Broadcast: true, RootEdit: edit}, a, nil
	case review.EventAcknowledged:
		return Post{Text: fmt.Sprintf("Acknowledged by %s.", mention(t.AcknowledgedBy)), RootEdit: edit}, a, nil
	case review.EventContradicted:
		var d review.ContradictedDetails
		if err := json.Unmarshal(details, &d); err != nil {
			return Post{}, Alert{}, fmt.Errorf("read the details of contradiction event %d: %w", n.EventID, err)
		}
		return Post{Text: fmt.Sprintf(":warning: The provider holds record %s for this operation, which is marked not sent (ledger: failed). "+
			"Check before the workflow retries it under a new key: it may do the thing twice.", codeSpan(d.ProviderRecordID, 100)),
			Broadcast: true, RootEdit: edit}, a, nil
	case review.EventResolved, review.EventResolvedByRelookup:
		return Post{Text: fmt.Sprintf("Resolved: %s, by %s.", escape(t.Resolution), mention(t.ResolvedBy)), RootEdit: edit}, a, nil
	}
	// An event kind this build does not know still gets a plain reply, so
	// the row is delivered rather than stuck.
	return Post{Text: fmt.Sprintf("Ticket %d: %s.", t.ID, escape(n.Kind)), RootEdit: edit}, a, nil
}

// mention shows "slack:U123" as a Slack mention, like [person] does for a
// bare user id.
func mention(actor string) string {
	return person(strings.TrimPrefix(actor, "slack:"))
}
