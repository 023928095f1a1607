package settle

import (
	"context"
	"errors"
	"time"

	"github.com/sweeper/sweeper/review"
)

// Outcomes of [Escalator.Relookup].
const (
	// OutcomeRelooked: looked up again, nothing settled; the next
	// re-lookup is scheduled.
	OutcomeRelooked review.EscalationKind = "relooked"
)

// Relookup makes ticket id's scheduled re-lookup, which the scan saw at
// done re-lookups: exactly one agreeing record resolves the ticket as done
// (as the re-lookup before an escalation does, contradictions of a "not
// sent" included); anything else schedules the next one, later by
// [review.Policy.NextRelookup], with no event and no alert. It does
// nothing to a ticket no longer open, looked up again since, not yet due,
// or whose reason does not relook.
func (e *Escalator) Relookup(ctx context.Context, id int64, done int, inTx review.InTx) (EscalationOutcome, error) {
	t, err := e.Reviews.EscalationTicket(ctx, id)
	if err != nil {
		return EscalationOutcome{}, err
	}
	skip := EscalationOutcome{Kind: OutcomeAlreadyHandled, Level: t.Level}
	if t.State != review.StateOpen || t.Relookups != done || t.RelookupAt.IsZero() || e.Now().Before(t.RelookupAt) {
		return skip, nil
	}
	logger := e.Logger.With("ticket_id", t.ID)
	seen, found, err := e.relookup(ctx, t)
	if err != nil {
		return EscalationOutcome{}, err
	}
	if found != nil {
		resolved, err := e.Reviews.ResolveByRelookup(ctx, t, found.recordID, found.evidence, e.Now(), inTx)
		switch {
		case errors.Is(err, review.ErrNotInReview) || err == nil && !resolved:
			if err := e.contradicts(ctx, t, found, logger); err != nil {
				return EscalationOutcome{}, err
			}
			if err == nil && !resolved {
				return skip, nil
			}
		case review.Unstorable(err):
			logger.Warn("re-lookup answer could not be stored", "error", err)
		case err != nil:
			return EscalationOutcome{}, err
		default:
			e.Metrics.Escalated(t.Level, string(OutcomeResolved))
			logger.Info("ticket resolved by a scheduled re-lookup", "provider_record_id", found.recordID)
			return EscalationOutcome{Kind: OutcomeResolved, Level: t.Level}, nil
		}
	}
	var next time.Time
	if t.Reason.Relooks() && seen.Skipped == "" {
		// (A ticket whose operation left review needs a person, not
		// another look.)
		next = e.relookups().NextRelookup(e.Now(), done+1)
	}
	scheduled, err := e.Reviews.ScheduleRelookup(ctx, t.ID, done, next, inTx)
	if err != nil {
		return EscalationOutcome{}, err
	}
	if !scheduled {
		return skip, nil
	}
	return EscalationOutcome{Kind: OutcomeRelooked, Level: t.Level}, nil
}

// ScanDueRelookups walks the open tickets whose scheduled re-lookup is due
// at now, in pages of batchSize, and calls page for each; it returns how
// many it saw.
func (e *Escalator) ScanDueRelookups(ctx context.Context, now time.Time, batchSize int, queryTimeout time.Duration, page func(context.Context, []review.DueRelookup) error) (int, error) {
	return scanPages(ctx, "relookup", batchSize, queryTimeout, func(ctx context.Context, last review.DueRelookup, n int) ([]review.DueRelookup, error) {
		return e.Reviews.DueRelookups(ctx, now, last, n)
	}, page)
}
