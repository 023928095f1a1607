package settle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// Escalator takes one escalation step for a ticket past its deadline: one
// more lookup first, then either the ticket resolved as done (exactly one
// agreeing record) or the policy's next step. The River job and `sweeper
// escalate --once` share it.
//
// It never sends, never deletes, and never changes an operation that is
// done or failed: the only ledger write is review→done, by compare-and-set.
type Escalator struct {
	Reviews *review.Store
	Ledger  *ledger.Store
	Settler *Settler
	Policy  review.Escalation
	// Relookups schedules the re-lookups of open tickets.
	Relookups review.Policy
	// Live, when set, is read for both policies at each step instead of
	// Policy and Relookups: a configuration reload changes it.
	Live   *Policies
	Logger *slog.Logger
	Now    func() time.Time
	// Metrics counts the steps taken once they commit; nil counts none.
	Metrics *metrics.Metrics
}

// EscalationOutcome says what [Escalator.Escalate] did.
type EscalationOutcome struct {
	// Kind is the policy step taken ("level", "repeat", "exhausted",
	// "held", "ack_timed_out"), or OutcomeResolved, or
	// OutcomeAlreadyHandled.
	Kind review.EscalationKind
	// Level is the ticket's escalation level after the step.
	Level int
}

// Outcomes of [Escalator.Escalate] besides the policy's steps.
const (
	// OutcomeResolved: the re-lookup proved the effect; ticket resolved,
	// ledger done.
	OutcomeResolved review.EscalationKind = "resolved"
	// OutcomeAlreadyHandled: the ticket was resolved, changed or no longer
	// due by the time it was read or written; nothing was written.
	OutcomeAlreadyHandled review.EscalationKind = "already_handled"
)

// Escalate takes at most one step for ticket id, which the caller saw at
// version. It does nothing when the ticket is no longer open, changed, is
// exhausted, or is not yet due by e.Now. Otherwise it looks the operation
// up once through the Settler; exactly one agreeing record resolves the
// ticket, anything else — an error included — escalates it by the policy.
// Each write is one transaction ending with inTx (nil: none); the
// compare-and-set on the ticket's version and the events' dedupe keys make
// a step happen at most once per ticket and level, whatever retries and
// replicas do. It returns [review.ErrTicketNotFound] for an unknown id.
func (e *Escalator) Escalate(ctx context.Context, id int64, version int, inTx review.InTx) (EscalationOutcome, error) {
	t, err := e.Reviews.EscalationTicket(ctx, id)
	if err != nil {
		return EscalationOutcome{}, err
	}
	skip := EscalationOutcome{Kind: OutcomeAlreadyHandled, Level: t.Level}
	// One policy for the whole step, whatever a reload does meanwhile.
	policy := e.escalation()
	if t.State != review.StateOpen || t.Version != version || t.Exhausted ||
		policy.Next(t.EscalationState, e.Now()).Kind == review.EscalationNone {
		return skip, nil
	}
	logger := e.Logger.With("ticket_id", t.ID)

	relookup, done, err := e.relookup(ctx, t)
	if err != nil {
		return EscalationOutcome{}, err
	}
	if done != nil {
		resolved, err := e.Reviews.ResolveByRelookup(ctx, t, done.recordID, done.evidence, e.Now(), inTx)
		switch {
		case review.Unstorable(err):
			// What the provider answered cannot be written: escalate as
			// for a failed lookup, rather than retry forever.
			relookup = review.Relookup{Error: "the provider's answer could not be stored: " + err.Error()}
			logger.Warn("re-lookup answer could not be stored; escalating", "error", err)
		case errors.Is(err, review.ErrNotInReview):
			if err := e.contradicts(ctx, t, done, logger); err != nil {
				return EscalationOutcome{}, err
			}
			relookup.Skipped = "a record was found, but the operation is no longer in review; left as it is"
			logger.Warn("re-lookup found a record, but the operation is no longer in review", "provider_record_id", done.recordID)
		case err != nil:
			return EscalationOutcome{}, err
		case !resolved:
			// Someone resolved or changed the ticket meanwhile — perhaps
			// as not sent, which the record found contradicts.
			if err := e.contradicts(ctx, t, done, logger); err != nil {
				return EscalationOutcome{}, err
			}
			return skip, nil
		default:
			e.Metrics.Escalated(t.Level, string(OutcomeResolved))
			logger.Info("ticket resolved by re-lookup", "provider_record_id", done.recordID)
			return EscalationOutcome{Kind: OutcomeResolved, Level: t.Level}, nil
		}
	}

	// The lookup took time: decide with the clock as it is now.
	step := policy.Next(t.EscalationState, e.Now())
	if step.Kind == review.EscalationNone {
		return skip, nil
	}
	details := review.EscalatedDetails{
		Step:      step.Kind,
		FromLevel: step.FromLevel,
		ToLevel:   step.ToLevel,
		Owner:     step.Owner,
		Priority:  step.Priority,
		Deadline:  step.Deadline,
		Relookup:  relookup,
	}
	var eventDetails any
	switch step.Kind {
	case review.EscalationAckTimedOut:
		eventDetails = review.AckTimedOutDetails{
			Level: step.ToLevel, AcknowledgedBy: t.AcknowledgedBy, AcknowledgedAt: t.AcknowledgedAt,
			AckTimeoutSeconds: int64(policy.AckTimeout(t.Level) / time.Second), Lapse: step.AckLapses,
			Owner: step.Owner, Priority: step.Priority, Deadline: step.Deadline, Relookup: relookup,
		}
	case review.EscalationRepeat:
		details.Repeat, details.MaxRepeats = step.RepeatCount, policy.MaxRepeats
	case review.EscalationExhausted:
		details.Repeats = &step.RepeatCount
	}
	if eventDetails == nil {
		eventDetails = details
	}
	taken, err := e.Reviews.Escalate(ctx, t, step, eventDetails, inTx)
	if err != nil {
		return EscalationOutcome{}, err
	}
	if !taken {
		return skip, nil
	}
	e.Metrics.Escalated(step.ToLevel, string(step.Kind))
	if step.Alerts() {
		logger.Info("ticket escalated", "step", step.Kind, "level", step.ToLevel, "owner", step.Owner,
			"priority", step.Priority, "repeat", step.RepeatCount)
	}
	return EscalationOutcome{Kind: step.Kind, Level: step.ToLevel}, nil
}

// contradicts raises the alarm when a re-lookup proved the effect of an
// operation that is failed — a person resolved it as not sent, or it was
// marked failed outside sweeper — while the lookup ran: a workflow may now
// retry it under a new key and do the thing twice. The ledger stays as it
// is (failed is final); the ticket gets one "record_found_after_not_sent"
// event with the new evidence, which is alerted like any other.
func (e *Escalator) contradicts(ctx context.Context, t review.EscalationTicket, p *proven, logger *slog.Logger) error {
	op, err := e.Ledger.GetByID(ctx, t.OperationID)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if op.Status != ledger.StatusFailed {
		return nil
	}
	added, err := e.Reviews.RecordContradiction(ctx, t.ID, p.recordID, p.evidence)
	if err != nil {
		return err
	}
	if added {
		logger.Warn("the provider holds a record for an operation marked not sent", "provider_record_id", p.recordID)
	}
	return nil
}

// relookupPacedWait bounds how long a re-lookup waits for this process's
// pacing before it gives up asking.
const relookupPacedWait = 5 * time.Second

// proven is a re-lookup that proves the effect.
type proven struct {
	recordID string
	evidence proof.Evidence
}

// relookup looks t's operation up once. It returns a proof when exactly one
// agreeing record was found, else what the lookup saw for the event. Only a
// cancelled ctx (shutdown, job timeout) is an error: a failed lookup is a
// finding, not a reason to hold the escalation back.
func (e *Escalator) relookup(ctx context.Context, t review.EscalationTicket) (review.Relookup, *proven, error) {
	op, err := e.Ledger.GetByID(ctx, t.OperationID)
	if errors.Is(err, ledger.ErrNotFound) {
		return review.Relookup{Skipped: "the ledger row is gone"}, nil, nil
	}
	if err != nil {
		return review.Relookup{}, nil, err
	}
	if op.Status != ledger.StatusReview {
		return review.Relookup{Skipped: fmt.Sprintf("the operation is %s; left as it is", op.Status)}, nil, nil
	}
	step := e.Settler.Attempt(ctx, op)
	// Held back by this process's own pacing (the provider was not asked):
	// wait a little for it, but no longer than relookupPacedWait in all —
	// a provider that is down, or a settle window, would hold the
	// escalation back for its whole length; the step is taken without a
	// lookup instead, and the next re-lookup tries again.
	for waited := time.Duration(0); step.Class == providers.ClassPaced && !step.Final && ctx.Err() == nil; {
		wait := max(step.RetryAfter, 100*time.Millisecond)
		if waited+wait > relookupPacedWait {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		waited += wait
		if ctx.Err() == nil {
			step = e.Settler.Attempt(ctx, op)
		}
	}
	if ctx.Err() != nil {
		return review.Relookup{}, nil, ctx.Err()
	}
	if !step.Final {
		return review.Relookup{Error: step.Err.Error()}, nil, nil
	}
	d, err := proof.Prove(ctx, e.Settler.table().Store(e.Settler.DB), op, step.Outcome)
	if err != nil {
		return review.Relookup{}, nil, err
	}
	if !d.Done {
		r := review.Relookup{Reason: d.Reason, Detail: d.Detail, RecordIDs: d.RecordIDs}
		if step.Err != nil {
			r.Error = step.Err.Error()
		}
		return r, nil, nil
	}
	ev := proof.NewEvidence(op, proof.LookupReport{
		Adapter: step.Adapter, Query: step.Query, Outcome: step.Outcome, At: e.Now(),
	}, d)
	return review.Relookup{Detail: d.Detail, RecordIDs: d.RecordIDs}, &proven{recordID: d.ProviderRecordID, evidence: ev}, nil
}

// ScanExpired walks the open tickets whose deadline has passed at now, then
// those whose acknowledgement outlived its level's ack timeout (none when
// the policy has no ack timeout), in keyset pages of batchSize, and calls
// page for each; it returns how many it saw (a ticket due both ways is seen
// twice; its second step finds it changed). An acknowledgement's row
// carries, as its Deadline, when it lapsed. Each page's query is bounded by
// queryTimeout.
func (e *Escalator) ScanExpired(ctx context.Context, now time.Time, batchSize int, queryTimeout time.Duration, page func(context.Context, []review.ExpiredTicket) error) (int, error) {
	seen, err := scanPages(ctx, "escalate", batchSize, queryTimeout, func(ctx context.Context, last review.ExpiredTicket, n int) ([]review.ExpiredTicket, error) {
		return e.Reviews.ExpiredTickets(ctx, now, review.ExpiredCursor{Deadline: last.Deadline, ID: last.ID}, n)
	}, page)
	timeouts := e.escalation().AckTimeouts()
	if err != nil || timeouts == nil {
		return seen, err
	}
	acks, err := scanPages(ctx, "escalate: acknowledgements", batchSize, queryTimeout, func(ctx context.Context, last review.ExpiredAck, n int) ([]review.ExpiredAck, error) {
		return e.Reviews.ExpiredAcks(ctx, now, timeouts, last, n)
	}, func(ctx context.Context, rows []review.ExpiredAck) error {
		tickets := make([]review.ExpiredTicket, len(rows))
		for i, r := range rows {
			tickets[i] = review.ExpiredTicket{ID: r.ID, Version: r.Version, Deadline: r.Lapsed}
		}
		return page(ctx, tickets)
	})
	return seen + acks, err
}

// scanPages reads keyset pages of up to batchSize rows with next — after
// the last row of the page before, the zero row for the first — each under
// queryTimeout, and hands each page to page; it returns how many rows it
// saw. what names the scan in its errors.
func scanPages[T any](ctx context.Context, what string, batchSize int, queryTimeout time.Duration,
	next func(ctx context.Context, last T, n int) ([]T, error), page func(context.Context, []T) error) (int, error) {
	var last T
	seen := 0
	for {
		queryCtx, cancel := context.WithTimeout(ctx, queryTimeout)
		rows, err := next(queryCtx, last, batchSize)
		cancel()
		if err != nil {
			return seen, fmt.Errorf("%s: %w", what, err)
		}
		if len(rows) == 0 {
			return seen, nil
		}
		seen += len(rows)
		if err := page(ctx, rows); err != nil {
			return seen, err
		}
		if len(rows) < batchSize {
			return seen, nil
		}
		last = rows[len(rows)-1]
	}
}

// escalation is the escalation policy now: Live's, else Policy.
func (e *Escalator) escalation() review.Escalation {
	if e.Live != nil {
		return e.Live.Escalation()
	}
	return e.Policy
}

// relookups is the re-lookup policy now: Live's, else Relookups.
func (e *Escalator) relookups() review.Policy {
	if e.Live != nil {
		return e.Live.Review()
	}
	return e.Relookups
}
