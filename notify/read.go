package notify

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// ReadIncident returns incident id as its messages show it, with its
// counts as of now: the incident from the outbox, what became of the
// provider's backlog and the tickets opened for it through tickets. The counts are a report, each read as it
// is committed when it is read. A refresh reads them at most every
// incident_refresh, on one dispatcher at a time, and no more once the
// counts are final.
func ReadIncident(ctx context.Context, db ledger.DB, tickets review.TicketReader, id int64) (message.Incident, error) {
	rec, err := outbox.NewIncidents(db).Incident(ctx, id)
	if err != nil {
		return message.Incident{}, err
	}
	in := message.Incident{ID: id, Provider: rec.Provider, StartedAt: rec.StartedAt, EndedAt: rec.EndedAt, Waiting: rec.Waiting,
		MovedToReview: rec.MovedToReview, MovedAfter: rec.MovedAfter}
	if in.Settled, in.Pending, err = tickets.Backlog(ctx, in.Provider, in.StartedAt, in.EndedAt); err != nil {
		return message.Incident{}, fmt.Errorf("read incident %d: %w", id, err)
	}
	if in.Review, err = tickets.OpenedSince(ctx, in.Provider, in.StartedAt, in.EndedAt); err != nil {
		return message.Incident{}, fmt.Errorf("read incident %d: %w", id, err)
	}
	return in, nil
}

// ReadAlertGroup returns alert group id as its message shows it now: the
// group from the outbox, its tickets through tickets.
func ReadAlertGroup(ctx context.Context, db ledger.DB, tickets review.TicketReader, id int64) (message.AlertGroup, error) {
	rec, err := outbox.NewGroups(db).Group(ctx, id)
	if err != nil {
		return message.AlertGroup{}, err
	}
	list, err := tickets.Summaries(ctx, rec.Tickets)
	if err != nil {
		return message.AlertGroup{}, fmt.Errorf("read the tickets of alert group %d: %w", id, err)
	}
	g := message.AlertGroup{ID: id, Provider: rec.Provider, Reason: rec.Reason, Folded: len(rec.Folded)}
	state := map[int64]string{}
	for i, t := range list {
		state[t.ID] = t.State
		shown := message.GroupedTicket{ID: t.ID, Workflow: t.Workflow, OpKey: t.OpKey, OpenedAt: t.CreatedAt}
		if i == 0 {
			g.Oldest = shown // Summaries are ordered by id: the oldest first
		}
		g.Newest = shown
		if t.State == review.StateOpen && len(g.Shown) < message.GroupShown {
			g.Shown = append(g.Shown, message.GroupedTicket{ID: t.ID, Workflow: t.Workflow, OpKey: t.OpKey, OpenedAt: t.CreatedAt})
		}
	}
	for _, m := range rec.Tickets {
		switch state[m] {
		case review.StateOpen:
			g.Open++
		case review.StateResolved:
			g.Resolved++
		}
	}
	return g, nil
}

// ReadTicketEvent returns what outbox row n of a ticket event carries to a
// receiver other than Slack ([message.NewTicketEvent]): the ticket as it is
// now, and the event, read through tickets.
func ReadTicketEvent(ctx context.Context, tickets review.TicketReader, n outbox.Notification) (message.TicketEvent, error) {
	if n.TicketID == 0 || n.EventID == 0 {
		return message.TicketEvent{}, fmt.Errorf("outbox row %d is no ticket event's", n.ID)
	}
	t, err := tickets.Ticket(ctx, n.TicketID)
	if err != nil {
		return message.TicketEvent{}, err
	}
	var ev proof.Evidence
	if err := json.Unmarshal(t.Evidence, &ev); err != nil {
		return message.TicketEvent{}, fmt.Errorf("read the evidence of ticket %d: %w", t.ID, err)
	}
	e, err := tickets.Event(ctx, n.EventID)
	if err != nil {
		return message.TicketEvent{}, err
	}
	return message.NewTicketEvent(t, ev, e, n.DedupeKey), nil
}
