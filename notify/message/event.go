package message

import (
	"fmt"
	"strings"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// TicketEvent is what a receiver other than Slack carries of one ticket
// event: the JSON body a webhook receives, and the custom details of a
// PagerDuty event. It shows what Slack's messages show — the recipient
// masked, never raw; never a resolution note nor a person's note.
type TicketEvent struct {
	// ID is the event's idempotency key, the same on every attempt:
	// "sweeper:" and the event's dedupe key ("sweeper:ticket:12:opened").
	ID string `json:"id"`
	// Type is "ticket." and Kind ("ticket.escalated").
	Type  string    `json:"type"`
	Kind  string    `json:"kind"`
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	// Summary is one line saying what happened to which ticket.
	Summary string     `json:"summary"`
	Ticket  TicketView `json:"ticket"`
}

// TicketView is the ticket as a TicketEvent shows it, as it is when the
// event is delivered.
type TicketView struct {
	ID              int64     `json:"id"`
	State           string    `json:"state"`
	Reason          string    `json:"reason"`
	Priority        string    `json:"priority"`
	Level           int       `json:"level"`
	Owner           string    `json:"owner"`
	Deadline        time.Time `json:"deadline"`
	OpenedAt        time.Time `json:"opened_at"`
	OpKey           string    `json:"op_key"`
	Workflow        string    `json:"workflow"`
	Provider        string    `json:"provider"`
	Action          string    `json:"action"`
	RecipientMasked string    `json:"recipient_masked,omitempty"`
	Detail          string    `json:"detail,omitempty"`
	AcknowledgedBy  string    `json:"acknowledged_by,omitempty"`
	// Resolution, ResolvedBy, ResolutionRecordID and ResolvedAt are set
	// once the ticket is resolved.
	Resolution         string     `json:"resolution,omitempty"`
	ResolvedBy         string     `json:"resolved_by,omitempty"`
	ResolutionRecordID string     `json:"resolution_record_id,omitempty"`
	ResolvedAt         *time.Time `json:"resolved_at,omitempty"`
}

// IdempotencyKey is the key a receiver other than Slack is given for the
// event whose dedupe key is dedupeKey.
func IdempotencyKey(dedupeKey string) string { return "sweeper:" + dedupeKey }

// NewTicketEvent is ticket event e of ticket t (as it is now, its evidence
// snapshot ev), delivered under dedupeKey. Every string from outside is
// made inert ([safetext.Printable]).
func NewTicketEvent(t review.Ticket, ev proof.Evidence, e review.Event, dedupeKey string) TicketEvent {
	a := NewAlert(t, ev)
	p := safetext.Printable
	view := TicketView{
		ID: t.ID, State: t.State, Reason: p(string(a.Reason)), Priority: t.Priority, Level: t.EscalationLevel,
		Owner: p(t.Owner), Deadline: t.Deadline, OpenedAt: t.CreatedAt,
		OpKey: p(a.OpKey), Workflow: p(a.Workflow), Provider: p(a.Provider), Action: p(a.Action),
		RecipientMasked: p(a.RecipientMasked), Detail: safetext.Truncate(p(a.Detail), 500),
		AcknowledgedBy: p(a.AcknowledgedBy),
	}
	if t.State == review.StateResolved {
		view.Resolution, view.ResolvedBy, view.ResolutionRecordID = t.Resolution, p(t.ResolvedBy), p(t.ResolutionRecordID)
		view.ResolvedAt = t.ResolvedAt
	}
	return TicketEvent{
		ID: IdempotencyKey(dedupeKey), Type: "ticket." + p(e.Kind), Kind: p(e.Kind), At: e.At, Actor: p(e.Actor),
		Summary: Headline(view, e.Kind),
		Ticket:  view,
	}
}

// Headline is one plain line naming the ticket, what it is about and what
// happened (at most 1024 characters, PagerDuty's bound).
func Headline(t TicketView, kind string) string {
	what := map[string]string{
		review.EventOpened:             "needs review",
		review.EventEscalated:          fmt.Sprintf("escalated to level %d", t.Level),
		review.EventAcknowledged:       "acknowledged",
		review.EventResolved:           "resolved: " + t.Resolution,
		review.EventResolvedByRelookup: "resolved: " + t.Resolution,
		review.EventContradicted:       "record found after it was marked not sent",
		review.EventReassigned:         "reassigned",
	}[kind]
	if what == "" {
		what = kind
	}
	var about []string
	for _, s := range []string{t.Workflow, t.Provider, t.Action} {
		if s != "" {
			about = append(about, s)
		}
	}
	line := fmt.Sprintf("sweeper ticket %d %s (%s): %s %s, owner %s", t.ID, what, t.Reason,
		strings.Join(about, " / "), t.OpKey, t.Owner)
	return safetext.Truncate(line, 1024)
}
