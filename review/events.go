package review

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
)

// EventKey is the dedupe key of a ticket's event: "ticket:ID:NAME", then
// ":PART" for each part. The key is unique across all events, so an event
// exists at most once whatever retries or replicas do; NAME is not always
// the event's kind (a person's resolution and a re-lookup's share
// "resolved", so that only one of them resolves a ticket).
func EventKey(ticketID int64, name string, parts ...any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ticket:%d:%s", ticketID, name)
	for _, p := range parts {
		fmt.Fprintf(&b, ":%v", p)
	}
	return b.String()
}

// newEvent is one audit event to append to a ticket's trail.
type newEvent struct {
	ticketID int64
	kind     string
	actor    string
	// details is written as JSON: a value to marshal, or json.RawMessage.
	details any
	// key is the event's [EventKey].
	key string
}

// appendEventsSQL appends one event per element of the arrays $1 ticket
// id, $2 kind, $3 actor, $4 details (JSON text), $5 dedupe key, skipping
// those whose key is already recorded.
const appendEventsSQL = `
	INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, details, dedupe_key)
	SELECT e.ticket_id, e.kind, e.actor, e.details::jsonb, e.dedupe_key
	FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[])
		AS e(ticket_id, kind, actor, details, dedupe_key)
	ON CONFLICT (dedupe_key) DO NOTHING`

// appendEvents is the one way events enter a ticket's audit trail: it
// appends events in one statement and returns how many were new. An event
// whose dedupe key is already recorded is skipped, not an error: the change
// it records was already made, which each caller answers in its own way.
// The outbox row of each new event is written by the table's trigger, in
// the same transaction.
func appendEvents(ctx context.Context, db ledger.DB, events ...newEvent) (int64, error) {
	if len(events) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(events))
	kinds := make([]string, len(events))
	actors := make([]string, len(events))
	details := make([]string, len(events))
	keys := make([]string, len(events))
	for i, e := range events {
		b, err := json.Marshal(e.details)
		if err != nil {
			return 0, fmt.Errorf("%s event of ticket %d: details: %w", e.kind, e.ticketID, err)
		}
		ids[i], kinds[i], actors[i], details[i], keys[i] = e.ticketID, e.kind, e.actor, string(b), e.key
	}
	tag, err := db.Exec(ctx, appendEventsSQL, ids, kinds, actors, details, keys)
	if err != nil {
		if len(events) == 1 {
			return 0, fmt.Errorf("%s event of ticket %d: %w", events[0].kind, events[0].ticketID, err)
		}
		return 0, fmt.Errorf("%d ticket events: %w", len(events), err)
	}
	return tag.RowsAffected(), nil
}

// The details of the events whose details are read back — by the Slack
// messages and the demo — are these types: the code that writes an event
// and the code that reads it share one.

// OpenedDetails are the details of a ticket's [EventOpened] event: why it
// opened, and the owner, priority and deadline it opened with.
type OpenedDetails struct {
	Reason   proof.Reason `json:"reason"`
	Owner    string       `json:"owner"`
	Priority string       `json:"priority"`
	Deadline time.Time    `json:"deadline"`
	Detail   string       `json:"detail"`
}

// EscalatedDetails are the details of an [EventEscalated] event: the step
// taken, the owner, priority and deadline after it, and what the lookup
// before it found.
type EscalatedDetails struct {
	Step      EscalationKind `json:"step"`
	FromLevel int            `json:"from_level"`
	ToLevel   int            `json:"to_level"`
	Owner     string         `json:"owner"`
	Priority  string         `json:"priority"`
	Deadline  time.Time      `json:"deadline"`
	Relookup  Relookup       `json:"relookup"`
	// Repeat and MaxRepeats, on a repeat step, are the repeat's number and
	// the policy's cap; Repeats, on an exhausted step, how many repeats
	// were made.
	Repeat     int  `json:"repeat,omitempty"`
	MaxRepeats int  `json:"max_repeats,omitempty"`
	Repeats    *int `json:"repeats,omitempty"`
}

// AckTimedOutDetails are the details of an [EventAckTimedOut] event: whose
// acknowledgement, made when and at which level, timed out after how long,
// and the ticket's owner, priority and deadline after it (the
// acknowledgement cleared, escalation resumed), with what the lookup
// before it found.
type AckTimedOutDetails struct {
	Level          int       `json:"level"`
	AcknowledgedBy string    `json:"acknowledged_by"`
	AcknowledgedAt time.Time `json:"acknowledged_at"`
	// AckTimeoutSeconds is the level's ack timeout (review.ack_timeout).
	AckTimeoutSeconds int64     `json:"timeout_seconds"`
	Lapse             int       `json:"lapse"`
	Owner             string    `json:"owner"`
	Priority          string    `json:"priority"`
	Deadline          time.Time `json:"deadline"`
	Relookup          Relookup  `json:"relookup"`
}

// AckTimeout is the ack timeout the event records.
func (d AckTimedOutDetails) AckTimeout() time.Duration {
	return time.Duration(d.AckTimeoutSeconds) * time.Second
}

// Relookup is what the lookup before an escalation found, as the
// [EventEscalated] event records it.
type Relookup struct {
	Reason    proof.Reason `json:"reason,omitempty"`
	Detail    string       `json:"detail,omitempty"`
	RecordIDs []string     `json:"record_ids,omitempty"`
	// Error is a lookup that did not answer: not proof either way.
	Error string `json:"error,omitempty"`
	// Skipped says why there was no lookup.
	Skipped string `json:"skipped,omitempty"`
}

// ResolvedByRelookupDetails are the details of an
// [EventResolvedByRelookup] event: the record found, and the evidence of
// the lookup that found it.
type ResolvedByRelookupDetails struct {
	Resolution       string         `json:"resolution"`
	ProviderRecordID string         `json:"provider_record_id"`
	Evidence         proof.Evidence `json:"evidence"`
}

// ContradictedDetails are the details of an [EventContradicted] event: the
// record found for an operation marked not sent, and the evidence of the
// lookup that found it.
type ContradictedDetails struct {
	ProviderRecordID string         `json:"provider_record_id"`
	Evidence         proof.Evidence `json:"evidence"`
}
