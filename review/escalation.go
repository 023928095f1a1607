package review

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
)

// EscalationLevel is one step of an [Escalation] policy.
type EscalationLevel struct {
	// Owner takes the ticket at this level.
	Owner string
	// Priority is the ticket's priority at this level.
	Priority string
	// Window is how long this level's owner has before the next step.
	Window time.Duration
	// AckTimeout is how long an acknowledgement at this level holds: once
	// it has passed, a ticket still open at this level is re-alerted and
	// escalates as if nobody had acknowledged it. Zero: no timeout.
	AckTimeout time.Duration
}

// Escalation is the escalation policy (review.escalation, repeat_every,
// max_repeats), PagerDuty-style. A ticket opens at level 0 with the owner
// [Policy.OwnerFor] names; each time its deadline passes it takes one step:
//
//   - below the top, it moves to the next level: ticket level i+1 is
//     Levels[i], with that level's owner, priority and a deadline Window
//     from now;
//   - at the top level (len(Levels); level 0 when there are none) it
//     re-alerts its current owner, keeping owner and priority, every
//     RepeatEvery, at most MaxRepeats times;
//   - once those are used up, one final step says escalation is exhausted:
//     the ticket stays open at the top level, its deadline is left as the
//     one that passed (so it reads "overdue since"), and no step follows;
//   - a ticket acknowledged at the top level gets no repeats and no final
//     step: it is held, its deadline moved RepeatEvery on without an alert,
//     so that it is still looked up again from time to time.
//
// An acknowledgement below the top level changes nothing here: it stops
// repeat alerts, not the deadline, so the ticket still escalates when its
// deadline passes.
//
// An acknowledgement lasts its level's ack timeout ([Escalation.AckTimeout];
// zero: for ever). Once that has passed since it was made, a ticket still
// open and not exhausted at that level takes one step that re-alerts its
// owner and clears the acknowledgement, so that escalation resumes from
// that level as if nobody had acknowledged it: at the top level the
// repeats (and the final step) follow RepeatEvery later; below it the
// deadline stays as it was. A level step whose deadline has passed too
// goes first: it re-alerts a new owner, and the acknowledgement, of the
// level left, no longer counts.
type Escalation struct {
	// Levels are the steps after the first owner, in order.
	Levels []EscalationLevel
	// RepeatEvery is the gap between re-alerts at the top level. Zero means
	// the top level's window: the last level's, or FirstWindow when there
	// are no levels.
	RepeatEvery time.Duration
	// FirstWindow is level 0's window (review.window).
	FirstWindow time.Duration
	// MaxRepeats caps the re-alerts at the top level; zero goes straight
	// from the top level to the final step.
	MaxRepeats int
	// FirstAckTimeout is level 0's ack timeout; the levels' own are on
	// Levels. Zero: no timeout.
	FirstAckTimeout time.Duration
}

// AckTimeout is how long an acknowledgement at level holds (zero: for
// ever): level 0's is FirstAckTimeout, level i's Levels[i-1].AckTimeout, and
// a level above the top (levels removed from the configuration since) has
// the top level's.
func (e Escalation) AckTimeout(level int) time.Duration {
	if level <= 0 {
		return e.FirstAckTimeout
	}
	if n := len(e.Levels); n > 0 {
		return e.Levels[min(level, n)-1].AckTimeout
	}
	return e.FirstAckTimeout
}

// AckTimeouts lists [Escalation.AckTimeout] by level, from 0 to the top
// level; a level above the top has the last entry. It is nil when no level
// has a timeout.
func (e Escalation) AckTimeouts() []time.Duration {
	out := make([]time.Duration, len(e.Levels)+1)
	on := false
	for i := range out {
		out[i] = e.AckTimeout(i)
		on = on || out[i] > 0
	}
	if !on {
		return nil
	}
	return out
}

// EscalationState is what the policy needs to know of a ticket.
type EscalationState struct {
	Level       int
	Owner       string
	Priority    string
	Deadline    time.Time
	RepeatCount int
	// Acknowledged is true when someone acknowledged the ticket at the
	// level it is at now (not at a lower one); AcknowledgedBy and
	// AcknowledgedAt say who and when.
	Acknowledged   bool
	AcknowledgedBy string
	AcknowledgedAt time.Time
	// AckLapses counts the acknowledgements of the ticket that timed out.
	AckLapses int
	// Exhausted is true once the final step has been taken.
	Exhausted bool
}

// EscalationKind names what an [EscalationStep] does.
type EscalationKind string

const (
	// EscalationNone: nothing to do, because the deadline has not passed
	// or escalation is exhausted.
	EscalationNone EscalationKind = ""
	// EscalationLevelUp: to the next level's owner, priority and window.
	EscalationLevelUp EscalationKind = "level"
	// EscalationRepeat: a re-alert at the top level.
	EscalationRepeat EscalationKind = "repeat"
	// EscalationExhausted: the final step; nothing follows.
	EscalationExhausted EscalationKind = "exhausted"
	// EscalationHeld: acknowledged at the top level; the deadline moves on
	// without an alert or an event.
	EscalationHeld EscalationKind = "held"
	// EscalationAckTimedOut: the acknowledgement at the ticket's level
	// outlived its ack timeout; the ticket's owner is re-alerted, the
	// acknowledgement cleared, and escalation resumes from that level.
	EscalationAckTimedOut EscalationKind = "ack_timed_out"
)

// EscalationStep is one step of the policy: the ticket's fields after it.
type EscalationStep struct {
	Kind        EscalationKind
	FromLevel   int
	ToLevel     int
	Owner       string
	Priority    string
	Deadline    time.Time
	RepeatCount int
	Exhausted   bool
	// AckLapses, on an ack_timed_out step, is the ticket's count of
	// lapsed acknowledgements after it: this lapse's number.
	AckLapses int
}

// Alerts reports whether the step is an alert: an "escalated" event that
// people hear about. A held step and no step are not.
func (s EscalationStep) Alerts() bool {
	switch s.Kind {
	case EscalationLevelUp, EscalationRepeat, EscalationExhausted, EscalationAckTimedOut:
		return true
	}
	return false
}

// EventKind is the kind of the event the step writes: "escalated", or
// "ack_timed_out" for an ack timeout; "" for a step that writes none.
func (s EscalationStep) EventKind() string {
	switch s.Kind {
	case EscalationAckTimedOut:
		return EventAckTimedOut
	case EscalationLevelUp, EscalationRepeat, EscalationExhausted:
		return EventEscalated
	}
	return ""
}

// DedupeKey is the step's event key, unique per ticket and step, so that
// the step's event exists at most once whatever retries or replicas do:
// "ticket:ID:escalated:LEVEL", "ticket:ID:repeat:LEVEL:N",
// "ticket:ID:exhausted", "ticket:ID:ack_timed_out:N" (N the lapse's
// number). It is "" for a step that writes no event.
func (s EscalationStep) DedupeKey(ticketID int64) string {
	switch s.Kind {
	case EscalationLevelUp:
		return EventKey(ticketID, EventEscalated, s.ToLevel)
	case EscalationRepeat:
		return EventKey(ticketID, "repeat", s.ToLevel, s.RepeatCount)
	case EscalationExhausted:
		return EventKey(ticketID, "exhausted")
	case EscalationAckTimedOut:
		return EventKey(ticketID, EventAckTimedOut, s.AckLapses)
	}
	return ""
}

// minRepeatEvery keeps a misconfigured zero interval from making a held
// ticket due at every tick.
const minRepeatEvery = time.Minute

// Next returns the step a ticket in state t takes at now, by the policy
// described on [Escalation]. It is pure: the same state and time give the
// same step.
func (e Escalation) Next(t EscalationState, now time.Time) EscalationStep {
	ackLapsed := e.AckLapsed(t, now)
	if t.Exhausted || (now.Before(t.Deadline) && !ackLapsed) {
		return EscalationStep{Kind: EscalationNone}
	}
	step := EscalationStep{
		FromLevel: t.Level, ToLevel: t.Level, Owner: t.Owner, Priority: t.Priority,
		Deadline: t.Deadline, RepeatCount: t.RepeatCount,
	}
	top := len(e.Levels)
	if ackLapsed && (t.Level >= top || now.Before(t.Deadline)) {
		step.Kind = EscalationAckTimedOut
		step.AckLapses = t.AckLapses + 1
		if t.Level >= top {
			// Escalation resumes: this is the re-alert, the next repeat
			// (or the final step) one interval on.
			step.Deadline = now.Add(e.repeatEvery())
		}
		return step
	}
	if t.Level < top {
		level := e.Levels[t.Level]
		step.Kind = EscalationLevelUp
		step.ToLevel = t.Level + 1
		step.Owner, step.Priority = level.Owner, level.Priority
		step.Deadline = now.Add(level.Window)
		step.RepeatCount = 0
		return step
	}
	// At the top level, or above it when levels were removed from the
	// configuration since: the ticket keeps its owner and priority.
	every := e.repeatEvery()
	switch {
	case t.Acknowledged:
		step.Kind = EscalationHeld
		step.Deadline = now.Add(every)
	case t.RepeatCount < e.MaxRepeats:
		step.Kind = EscalationRepeat
		step.RepeatCount = t.RepeatCount + 1
		step.Deadline = now.Add(every)
	default:
		step.Kind = EscalationExhausted
		step.Exhausted = true
	}
	return step
}

// AckLapsed reports whether ticket t's acknowledgement at its level has
// outlived that level's ack timeout at now.
func (e Escalation) AckLapsed(t EscalationState, now time.Time) bool {
	timeout := e.AckTimeout(t.Level)
	return t.Acknowledged && !t.Exhausted && timeout > 0 && !t.AcknowledgedAt.IsZero() &&
		!now.Before(t.AcknowledgedAt.Add(timeout))
}

func (e Escalation) repeatEvery() time.Duration {
	every := e.RepeatEvery
	if every <= 0 {
		every = e.FirstWindow
		if n := len(e.Levels); n > 0 {
			every = e.Levels[n-1].Window
		}
	}
	return max(every, minRepeatEvery)
}

// Escalation events and actors.
const (
	// EventEscalated is a level, repeat or exhausted step.
	EventEscalated = "escalated"
	// EventAckTimedOut is an ack_timed_out step: the acknowledgement at
	// the ticket's level outlived its ack timeout and was cleared.
	EventAckTimedOut = "ack_timed_out"
	// EventResolvedByRelookup: the lookup before an escalation found
	// exactly one agreeing record; the ticket is resolved as done.
	EventResolvedByRelookup = "resolved_by_relookup"
	// ResolutionDone is the outcome of a ticket whose effect is proven.
	ResolutionDone = "done"
)

// EscalationTicket is a ticket as escalation reads it.
type EscalationTicket struct {
	ID          int64
	OperationID int64
	OpKey       string
	State       string
	Version     int
	Reason      proof.Reason
	// Relookups counts the scheduled re-lookups made; RelookupAt is when
	// the next is due (zero: none).
	Relookups  int
	RelookupAt time.Time
	EscalationState
}

// ExpiredTicket is one row of [Store.ExpiredTickets].
type ExpiredTicket struct {
	ID       int64
	Version  int
	Deadline time.Time
}

// ExpiredCursor is a keyset position in the escalation scan: the last row
// seen. The zero value starts from the beginning.
type ExpiredCursor struct {
	Deadline time.Time
	ID       int64
}

// ExpiredTicketsQuery is the escalation scan, exported so that a test can
// EXPLAIN it: $1 now, $2/$3 the cursor (NULL for the first page), $4 the
// limit. The partial index tickets_open_deadline_idx (open tickets not yet
// exhausted) serves it, so its cost follows the tickets still escalating.
const ExpiredTicketsQuery = `SELECT id, version, deadline FROM sweeper.tickets
	WHERE state = 'open' AND NOT escalation_exhausted AND deadline <= $1
	  AND ($2::timestamptz IS NULL OR (deadline, id) > ($2, $3))
	ORDER BY deadline, id
	LIMIT $4`

// ExpiredTickets returns up to limit open, not exhausted tickets whose
// deadline is at or before now, after cursor in (deadline, id) order.
// Fewer than limit rows means the end.
func (s *Store) ExpiredTickets(ctx context.Context, now time.Time, after ExpiredCursor, limit int) ([]ExpiredTicket, error) {
	var cursor any
	if after != (ExpiredCursor{}) {
		cursor = after.Deadline
	}
	rows, err := s.db.Query(ctx, ExpiredTicketsQuery, now, cursor, after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("expired tickets: %w", err)
	}
	tickets, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ExpiredTicket])
	if err != nil {
		return nil, fmt.Errorf("expired tickets: %w", err)
	}
	return tickets, nil
}

// ExpiredAck is one row of [Store.ExpiredAcks]: a ticket whose
// acknowledgement at its level outlived the level's ack timeout.
type ExpiredAck struct {
	ID             int64
	Version        int
	AcknowledgedAt time.Time
	// Lapsed is when the acknowledgement timed out.
	Lapsed time.Time
}

// ExpiredAcksQuery is the scan for acknowledgements past their timeout,
// exported so that a test can EXPLAIN it: $1 now, $2 the shortest timeout
// and $3 the timeouts by level (microseconds; a level above the last entry
// has the last), $4/$5 the cursor (NULL for the first page), $6 the limit.
// The partial index tickets_open_ack_idx (open, still escalating,
// acknowledged tickets) serves it.
const ExpiredAcksQuery = `SELECT id, version, acknowledged_at, acknowledged_at + timeout * interval '1 microsecond'
	FROM (SELECT id, version, acknowledged_at,
	             ($3::bigint[])[least(escalation_level, cardinality($3::bigint[]) - 1) + 1] AS timeout
	      FROM sweeper.tickets
	      WHERE state = 'open' AND NOT escalation_exhausted AND acknowledged_at IS NOT NULL
	        AND acknowledged_at <= $1::timestamptz - $2 * interval '1 microsecond'
	        AND acknowledged_level = escalation_level
	        AND ($4::timestamptz IS NULL OR (acknowledged_at, id) > ($4, $5))) t
	WHERE timeout > 0 AND acknowledged_at + timeout * interval '1 microsecond' <= $1
	ORDER BY acknowledged_at, id
	LIMIT $6`

// ExpiredAcks returns up to limit open, not exhausted tickets acknowledged
// at their level whose level's ack timeout (timeouts, by level, as
// [Escalation.AckTimeouts] lists them) has passed at now, after the cursor
// (the zero value starts from the beginning) in (acknowledged_at, id)
// order. Fewer than limit rows means the end; no positive timeout, none.
func (s *Store) ExpiredAcks(ctx context.Context, now time.Time, timeouts []time.Duration, after ExpiredAck, limit int) ([]ExpiredAck, error) {
	micros := make([]int64, len(timeouts))
	var shortest time.Duration
	for i, d := range timeouts {
		micros[i] = d.Microseconds()
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest == 0 {
		return nil, nil
	}
	var cursor any
	if !after.AcknowledgedAt.IsZero() {
		cursor = after.AcknowledgedAt
	}
	rows, err := s.db.Query(ctx, ExpiredAcksQuery, now, shortest.Microseconds(), micros, cursor, after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("expired acknowledgements: %w", err)
	}
	acks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ExpiredAck])
	if err != nil {
		return nil, fmt.Errorf("expired acknowledgements: %w", err)
	}
	return acks, nil
}

// EscalationTicket reads what escalation needs of ticket id, or
// [ErrTicketNotFound].
func (s *Store) EscalationTicket(ctx context.Context, id int64) (EscalationTicket, error) {
	var t EscalationTicket
	var relookupAt, ackAt *time.Time
	err := s.db.QueryRow(ctx, `SELECT id, operation_id, op_key, state, version, reason, relookups, relookup_at,
			escalation_level, owner, priority,
			deadline, repeat_count, escalation_exhausted, coalesce(acknowledged_level = escalation_level, false),
			coalesce(acknowledged_by, ''), acknowledged_at, ack_lapses
		FROM sweeper.tickets WHERE id = $1`, id).Scan(&t.ID, &t.OperationID, &t.OpKey, &t.State, &t.Version,
		&t.Reason, &t.Relookups, &relookupAt,
		&t.Level, &t.Owner, &t.Priority, &t.Deadline, &t.RepeatCount, &t.Exhausted, &t.Acknowledged,
		&t.AcknowledgedBy, &ackAt, &t.AckLapses)
	if relookupAt != nil {
		t.RelookupAt = *relookupAt
	}
	if ackAt != nil {
		t.AcknowledgedAt = *ackAt
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return EscalationTicket{}, fmt.Errorf("%w: %d", ErrTicketNotFound, id)
	}
	if err != nil {
		return EscalationTicket{}, fmt.Errorf("get ticket %d: %w", id, err)
	}
	return t, nil
}

// DueRelookup is one row of [Store.DueRelookups].
type DueRelookup struct {
	ID         int64
	Relookups  int
	RelookupAt time.Time
}

// DueRelookups returns up to limit open tickets whose scheduled re-lookup
// is due at now, oldest due first, after cursor (the zero value starts
// from the beginning). The partial index tickets_relookup_idx serves it.
func (s *Store) DueRelookups(ctx context.Context, now time.Time, after DueRelookup, limit int) ([]DueRelookup, error) {
	var cursor any
	if after != (DueRelookup{}) {
		cursor = after.RelookupAt
	}
	rows, err := s.db.Query(ctx, `SELECT id, relookups, relookup_at FROM sweeper.tickets
		WHERE state = 'open' AND relookup_at IS NOT NULL AND relookup_at <= $1
		  AND ($2::timestamptz IS NULL OR (relookup_at, id) > ($2, $3))
		ORDER BY relookup_at, id
		LIMIT $4`, now, cursor, after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("due re-lookups: %w", err)
	}
	due, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DueRelookup])
	if err != nil {
		return nil, fmt.Errorf("due re-lookups: %w", err)
	}
	return due, nil
}

// ScheduleRelookup records that ticket id's re-lookup number done+1 was
// made and found nothing to settle, and sets when the next is due (the
// zero time: none). It is a compare-and-set on the count, so a re-lookup
// repeated by a retry or a replica is recorded once; false means someone
// else recorded it, or the ticket is no longer open. It writes no event:
// a re-lookup that settles nothing is nothing to tell anyone. inTx runs
// before the commit.
func (s *Store) ScheduleRelookup(ctx context.Context, id int64, done int, next time.Time, inTx InTx) (bool, error) {
	var at any
	if !next.IsZero() {
		at = next
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("schedule re-lookup of ticket %d: %w", id, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	tag, err := tx.Exec(ctx, `UPDATE sweeper.tickets SET relookups = relookups + 1, relookup_at = $3
		WHERE id = $1 AND relookups = $2 AND state = 'open'`, id, done, at)
	if err != nil {
		return false, fmt.Errorf("schedule re-lookup of ticket %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	return true, finish(ctx, tx, inTx, id)
}

// RelookupNow makes every open lookup_failed ticket of provider due for
// its re-lookup at once — the provider is back — and reports how many.
func (s *Store) RelookupNow(ctx context.Context, provider string) (int64, error) {
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.tickets t SET relookup_at = now()
		FROM `+s.ledger.OperationsSQL()+` o
		WHERE o.id = t.operation_id AND o.provider = $1 AND t.state = 'open' AND t.reason = 'lookup_failed'
		  AND t.relookup_at IS NOT NULL AND t.relookup_at > now()`, provider)
	if err != nil {
		return 0, fmt.Errorf("re-lookups of %s now: %w", provider, err)
	}
	return tag.RowsAffected(), nil
}

// InTx runs inside a store transaction just before it commits — a River
// job's completion (river.JobCompleteTx), so that the job is done exactly
// when its outcome is. Its error rolls everything back.
type InTx func(ctx context.Context, tx pgx.Tx) error

// Escalate writes step for ticket t in one transaction: a compare-and-set
// on (id, version, open, not exhausted) that sets owner, priority, level,
// deadline, repeat count and the exhausted flag, and — for a step that
// alerts — the "escalated" event with details ([EscalatedDetails]) under the
// step's dedupe key. An alerting step bumps the version; a held step does
// not (it changes nothing a person sees, and must not outdate their
// buttons), and its compare-and-set includes the deadline instead.
//
// An ack_timed_out step also clears the acknowledgement and counts the
// lapse (ack_lapses), its compare-and-set including the acknowledgement t
// was read with, and writes an "ack_timed_out" event ([AckTimedOutDetails])
// instead.
//
// It reports false, having written nothing, when the ticket changed since t
// was read or the step's event already exists: someone else took the step.
func (s *Store) Escalate(ctx context.Context, t EscalationTicket, step EscalationStep, details any, inTx InTx) (bool, error) {
	if step.Kind == EscalationNone {
		return false, errors.New("escalate: no step to take")
	}
	bump := 1
	if !step.Alerts() {
		bump = 0
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("escalate ticket %d: %w", t.ID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
		return false, fmt.Errorf("escalate ticket %d: %w", t.ID, err)
	}
	lapse := step.Kind == EscalationAckTimedOut
	var ackAt any
	if lapse {
		if !t.Acknowledged || t.AcknowledgedAt.IsZero() || step.AckLapses != t.AckLapses+1 {
			return false, fmt.Errorf("escalate ticket %d: an ack timeout of a ticket not acknowledged at its level", t.ID)
		}
		ackAt = t.AcknowledgedAt
	}
	tag, err := tx.Exec(ctx, `
		UPDATE sweeper.tickets
		SET owner = $4, priority = $5, escalation_level = $6, deadline = $7, repeat_count = $8,
		    escalation_exhausted = $9, version = version + $10,
		    acknowledged_by = CASE WHEN $11 THEN NULL ELSE acknowledged_by END,
		    acknowledged_at = CASE WHEN $11 THEN NULL ELSE acknowledged_at END,
		    acknowledged_level = CASE WHEN $11 THEN NULL ELSE acknowledged_level END,
		    ack_lapses = ack_lapses + CASE WHEN $11 THEN 1 ELSE 0 END
		WHERE id = $1 AND version = $2 AND state = 'open' AND NOT escalation_exhausted
		  AND ($10 = 1 OR deadline = $3)
		  AND (NOT $11 OR (acknowledged_at = $12 AND acknowledged_level = escalation_level))`,
		t.ID, t.Version, t.Deadline, step.Owner, step.Priority, step.ToLevel, step.Deadline, step.RepeatCount,
		step.Exhausted, bump, lapse, ackAt)
	if err != nil {
		return false, fmt.Errorf("escalate ticket %d: %w", t.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if step.Alerts() {
		added, err := appendEvents(ctx, tx, newEvent{ticketID: t.ID, kind: step.EventKind(), actor: ActorSweeper,
			details: details, key: step.DedupeKey(t.ID)})
		if err != nil || added == 0 {
			return false, err
		}
	}
	return true, finish(ctx, tx, inTx, t.ID)
}

// ResolveByRelookup resolves ticket t as done with recordID, in one
// transaction: the ticket (compare-and-set on id, version and open) with
// resolution "done" by sweeper, the ledger operation review→done with the
// record id (compare-and-set), and a "resolved_by_relookup" event carrying
// the new evidence, under the dedupe key "ticket:ID:resolved". The evidence
// snapshot the ticket opened with is immutable; the new one lives in the
// event.
//
// It reports false, having written nothing, when the ticket changed since t
// was read or was resolved meanwhile; it returns [ErrNotInReview], having
// written nothing, when the operation is no longer in review.
func (s *Store) ResolveByRelookup(ctx context.Context, t EscalationTicket, recordID string, ev proof.Evidence, now time.Time, inTx InTx) (bool, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// The ticket first: its row lock orders concurrent resolutions and
	// escalations of one ticket, and the loser's compare-and-set finds a
	// new version.
	tag, err := tx.Exec(ctx, `
		UPDATE sweeper.tickets
		SET state = 'resolved', resolution = 'done', resolved_by = $3, resolved_at = $4,
		    resolution_record_id = $5, version = version + 1
		WHERE id = $1 AND version = $2 AND state = 'open'`,
		t.ID, t.Version, ActorSweeper, now, recordID)
	if err != nil {
		return false, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	ops := s.ledger.Store(tx)
	op, err := ops.GetByID(ctx, t.OperationID)
	if err != nil {
		return false, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
	}
	// One record proves one operation, checked under the record's lock.
	if holder, err := proof.ProvesOther(ctx, ops, op, recordID, true); err != nil || holder != "" {
		if err == nil {
			err = errors.New(proof.HeldDetail(recordID, holder))
		}
		return false, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
	}
	moved, err := ops.CompareAndSet(ctx, t.OperationID, ledger.StatusReview, ledger.StatusDone, recordID)
	if err != nil {
		return false, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
	}
	if !moved {
		return false, fmt.Errorf("%w: ticket %d, operation %s", ErrNotInReview, t.ID, t.OpKey)
	}
	details := ResolvedByRelookupDetails{Resolution: ResolutionDone, ProviderRecordID: recordID, Evidence: ev}
	added, err := appendEvents(ctx, tx, newEvent{ticketID: t.ID, kind: EventResolvedByRelookup, actor: ActorSweeper,
		details: details, key: EventKey(t.ID, EventResolved)})
	if err != nil || added == 0 {
		return false, err
	}
	return true, finish(ctx, tx, inTx, t.ID)
}

// EventContradicted: a re-lookup found exactly one agreeing record for an
// operation that was marked failed (resolved as not sent) meanwhile. The
// ledger stays failed; people must hear of it before a workflow retries.
const EventContradicted = "record_found_after_not_sent"

// RecordContradiction appends ticket id's [EventContradicted] event, with
// the record and the evidence that proves it, at most once per ticket
// (dedupe key "ticket:ID:contradicted"). It reports whether the event is
// new. It changes neither the ticket nor the ledger.
func (s *Store) RecordContradiction(ctx context.Context, id int64, recordID string, ev proof.Evidence) (bool, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("record a contradiction on ticket %d: %w", id, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	added, err := appendEvents(ctx, tx, newEvent{ticketID: id, kind: EventContradicted, actor: ActorSweeper,
		details: ContradictedDetails{ProviderRecordID: recordID, Evidence: ev}, key: EventKey(id, "contradicted")})
	if err != nil {
		return false, err
	}
	return added == 1, finish(ctx, tx, nil, id)
}

// ErrNotInReview: a ticket's operation is no longer in review (a workflow
// or a person settled it directly), so sweeper leaves it as it is.
var ErrNotInReview = errors.New("operation is not in review")

func finish(ctx context.Context, tx pgx.Tx, inTx InTx, ticketID int64) error {
	if inTx != nil {
		if err := inTx(ctx, tx); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit ticket %d: %w", ticketID, err)
	}
	return nil
}
