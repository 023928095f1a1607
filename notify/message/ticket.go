package message

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// Post is what one outbox row's message says: what the dispatcher posts,
// and for a reply the edit of the root message it makes. It carries no
// metadata: the dispatcher adds [Metadata] for the row it delivers.
type Post struct {
	// Text is the message's text: the notification and the fallback for
	// Blocks. Required.
	Text string
	// Blocks is the Block Kit layout; none posts Text alone.
	Blocks []slack.Block
	// Broadcast also shows a thread reply in the channel.
	Broadcast bool
	// RootEdit, for a reply, is what the ticket's root message becomes
	// (chat.update); nil leaves it as it is. Ignored for a root message.
	RootEdit *RootEdit
}

// RootEdit is the new content of a ticket's root message. It replaces the
// text and every block.
type RootEdit struct {
	Text   string
	Blocks []slack.Block
}

// TicketPost is the message of ticket event e, delivered under dedupeKey,
// from ticket t as it is now and its evidence snapshot ev: "opened" posts
// the root message; an escalation, an acknowledgement, an acknowledgement
// that timed out or a resolution edits the root to the ticket's current
// state and adds a thread reply (broadcast to the channel for escalations
// and ack timeouts, so the owner is pinged),
// as does a contradiction; an event kind this build does not know still
// gets a plain reply, so that its row is delivered rather than stuck.
// newRoot, when not "", says why the message is posted as the ticket's new
// root ([NewRootUndelivered], [NewRootRemoved], [NewRootFolded]): it then shows the ticket's
// current state with the event's own text ([NewRootMessage]). Its error is
// for details that cannot be read.
func TicketPost(t review.Ticket, ev proof.Evidence, e review.Event, dedupeKey, newRoot string) (Post, error) {
	a := NewAlert(t, ev)
	p, err := eventPost(t, a, e, dedupeKey)
	if err != nil || newRoot == "" {
		return p, err
	}
	return NewRootMessage(a, Replacement{Why: newRoot, Event: p.Text, DedupeKey: dedupeKey}).Post(), nil
}

// eventPost is event e's message as a reply (the root message for
// "opened"), a being what it shows of t.
func eventPost(t review.Ticket, a Alert, e review.Event, dedupeKey string) (Post, error) {
	root := RootMessage(a)
	if t.State == review.StateResolved {
		root = ResolvedMessage(a, t.Resolution, t.ResolvedBy, t.ResolutionRecordID)
	}
	edit := &RootEdit{Text: root.Text, Blocks: root.Blocks}

	switch e.Kind {
	case review.EventOpened:
		return root.Post(), nil
	case review.EventEscalated:
		var d review.EscalatedDetails
		if err := json.Unmarshal(e.Details, &d); err != nil {
			return Post{}, fmt.Errorf("read the details of escalation event %d: %w", e.ID, err)
		}
		reply := EscalationReply(a, EscalationEvent{Kind: d.Step, FromLevel: d.FromLevel, ToLevel: d.ToLevel,
			Repeat: d.Repeat, DedupeKey: dedupeKey})
		return Post{Text: reply.Text, Blocks: reply.Blocks, Broadcast: true, RootEdit: edit}, nil
	case review.EventAcknowledged:
		// The event's actor: the acknowledgement may have timed out, and
		// been cleared, by the time this is delivered.
		return Post{Text: fmt.Sprintf("Acknowledged by %s.", mention(e.Actor)), RootEdit: edit}, nil
	case review.EventAckTimedOut:
		var d review.AckTimedOutDetails
		if err := json.Unmarshal(e.Details, &d); err != nil {
			return Post{}, fmt.Errorf("read the details of ack timeout event %d: %w", e.ID, err)
		}
		reply := AckTimeoutReply(a, AckTimeoutEvent{Level: d.Level, By: d.AcknowledgedBy, AckTimeout: d.AckTimeout(), DedupeKey: dedupeKey})
		return Post{Text: reply.Text, Blocks: reply.Blocks, Broadcast: true, RootEdit: edit}, nil
	case review.EventContradicted:
		var d review.ContradictedDetails
		if err := json.Unmarshal(e.Details, &d); err != nil {
			return Post{}, fmt.Errorf("read the details of contradiction event %d: %w", e.ID, err)
		}
		return Post{Text: fmt.Sprintf(":warning: The provider holds record %s for this operation, which is marked not sent (ledger: failed). "+
			"Check before the workflow retries it under a new key: it may do the thing twice.", codeSpan(d.ProviderRecordID, 100)),
			Broadcast: true, RootEdit: edit}, nil
	case review.EventReassigned:
		var d review.ReassignedDetails
		if err := json.Unmarshal(e.Details, &d); err != nil {
			return Post{}, fmt.Errorf("read the details of reassignment event %d: %w", e.ID, err)
		}
		// A thread reply mentioning the new owner pings them.
		return Post{Text: fmt.Sprintf("Reassigned from %s to %s by %s.", person(d.From), person(d.To), mention(e.Actor)),
			RootEdit: edit}, nil
	case review.EventNoted:
		// What a person wrote stays on the review page: a note may quote
		// what Slack must not show.
		return Post{Text: fmt.Sprintf("Note added by %s (on the review page).", mention(e.Actor))}, nil
	case review.EventSilenceEnded:
		var d struct {
			SilenceID int64 `json:"silence_id"`
		}
		if err := json.Unmarshal(e.Details, &d); err != nil {
			return Post{}, fmt.Errorf("read the details of silence event %d: %w", e.ID, err)
		}
		// One message for what the silence held: the ticket as it is now
		// (the root's edit), its owner named so that they hear of it.
		return Post{Text: fmt.Sprintf("Silence %d ended. Still open, owner %s, escalation level %d: notifications held meanwhile are not posted (sweeper outbox list --state silenced).",
			d.SilenceID, person(t.Owner), t.EscalationLevel), RootEdit: edit}, nil
	case review.EventResolved, review.EventResolvedByRelookup:
		return Post{Text: fmt.Sprintf("Resolved: %s, by %s.", escape(t.Resolution), mention(t.ResolvedBy)), RootEdit: edit}, nil
	}
	return Post{Text: fmt.Sprintf("Ticket %d: %s.", t.ID, escape(e.Kind)), RootEdit: edit}, nil
}

// mention shows "slack:U123" as a Slack mention, like [person] does for a
// bare user id.
func mention(actor string) string {
	return person(strings.TrimPrefix(actor, "slack:"))
}
