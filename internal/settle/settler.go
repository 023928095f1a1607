package settle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// Settler looks up one operation and applies what the lookup proves. The
// River lookup worker and `sweeper sweep --once` share it.
type Settler struct {
	Providers map[string]*providers.Provider
	Reviews   Applier
	// DB reads the ledger (who already holds a record).
	DB     ledger.DB
	Logger *slog.Logger
	Now    func() time.Time
	// Metrics counts settlements and tickets once they commit; nil counts
	// none.
	Metrics *metrics.Metrics
}

// Applier writes a decision: a *review.Store, or a *review.Batcher that
// shares commits between concurrent lookups.
type Applier interface {
	Apply(ctx context.Context, op ledger.Operation, d proof.Decision, ev proof.Evidence, now time.Time) (review.Applied, error)
}

// Step is what one lookup attempt leads to: a final outcome to decide on,
// or an error to retry (Final false).
type Step struct {
	Final      bool
	Outcome    proof.Outcome
	Query      *providers.Query
	Adapter    string
	Err        error
	Class      providers.Class
	RetryAfter time.Duration
}

// Attempt makes one lookup for op. An operation whose provider is not
// configured, or that lacks the fields a lookup needs, is final at once
// (invalid_operation); so are an unsupported provider and a permanent
// error. A cancelled ctx gives a non-final step carrying ctx's error.
func (s *Settler) Attempt(ctx context.Context, op ledger.Operation) Step {
	p, q, refused := s.Prepare(op)
	if refused != nil {
		return *refused
	}
	records, err := p.Lookup(ctx, q)
	return s.Answer(ctx, op, p, q, records, err)
}

// Prepare returns op's provider and the query to ask it, or the final step
// for an operation that cannot be looked up.
func (s *Settler) Prepare(op ledger.Operation) (*providers.Provider, providers.Query, *Step) {
	p := s.Providers[op.Provider]
	if p == nil {
		return nil, providers.Query{}, &Step{Final: true, Outcome: proof.Invalid(fmt.Sprintf("provider %q is not configured: no [providers.%s] block", op.Provider, op.Provider))}
	}
	if problem := proof.Lookable(op); problem != "" {
		return nil, providers.Query{}, &Step{Final: true, Adapter: p.Kind, Outcome: proof.Invalid(problem)}
	}
	if now := s.Now(); op.FirstAttemptAt.IsZero() || op.FirstAttemptAt.After(now.Add(ledger.MaxClockSkew)) {
		return nil, providers.Query{}, &Step{Final: true, Adapter: p.Kind, Outcome: proof.Invalid(
			"first_attempt_at is not a time an attempt was made (infinite, or in the future): no lookup window can be drawn")}
	}
	if !p.Matching().ByKey && op.Recipient == "" {
		return nil, providers.Query{}, &Step{Final: true, Adapter: p.Kind, Outcome: proof.Invalid(
			"missing recipient: provider " + op.Provider + " matches records by resemblance (recipient, payload, time), not by op_key")}
	}
	return p, proof.SearchFor(op, p.Matching(), s.Now()), nil
}

// Answer turns the provider's answer to q, made for op, into a step.
func (s *Settler) Answer(ctx context.Context, op ledger.Operation, p *providers.Provider, q providers.Query, records []providers.Record, err error) Step {
	step := Step{Query: &q, Adapter: p.Kind}
	if err == nil {
		now := s.Now()
		if settled := op.FirstAttemptAt.Add(p.SettleWindow); len(records) == 0 && now.Before(settled) {
			// The provider's search may not list the record yet: ask again
			// once the window has passed, spending no attempt or budget;
			// only an empty answer after it is not_found.
			step.Class, step.RetryAfter = providers.ClassPaced, settled.Sub(now)
			step.Err = fmt.Errorf("%s: no record yet, but its search may lag until %s (settle_window %s after the first attempt)",
				op.Provider, settled.UTC().Format(time.RFC3339), p.SettleWindow)
			return step
		}
		if until := op.FirstAttemptAt.Add(p.InFlightFor); proof.InFlight(records) && now.Before(until) {
			// The provider is still making the effect: neither done nor
			// not_found. Asked again, spending no attempt or budget, until
			// in_flight_for has passed; only then an in_flight ticket.
			step.Class, step.RetryAfter = providers.ClassPaced, InFlightWait(now.Sub(op.FirstAttemptAt), until.Sub(now))
			step.Err = fmt.Errorf("%s: the provider reports the effect still in flight; asked again until %s (in_flight_for %s after the first attempt)",
				op.Provider, until.UTC().Format(time.RFC3339), p.InFlightFor)
			return step
		}
		step.Final, step.Outcome = true, proof.Answered(q, records)
		return step
	}
	if ctx.Err() != nil {
		step.Err = ctx.Err()
		return step
	}
	step.Err = err
	step.Class, step.RetryAfter = providers.Classify(err)
	switch step.Class {
	case providers.ClassUnsupported:
		step.Final, step.Outcome = true, proof.Unsupported(err.Error())
	case providers.ClassPermanent:
		step.Final, step.Outcome = true, proof.Failed("permanent error: "+err.Error())
	}
	return step
}

// InFlightWait is how long an operation of age age (since its first
// attempt) whose record is still in flight waits before it is asked again:
// a tenth of its age, at least a minute, and never past left, what remains
// of its provider's in_flight_for. A scheduled message is asked about
// often at first and seldom once it has waited long.
func InFlightWait(age, left time.Duration) time.Duration {
	return max(time.Second, min(max(time.Minute, age/10), left))
}

// Settled says what happened to one operation.
type Settled struct {
	Decision proof.Decision
	Applied  review.Applied
}

// ErrOperationChanged: the operation's row changed between its lookup and
// the write (a workflow rewrote it): the answer is for what it was, so the
// operation is looked up again rather than settled on it.
var ErrOperationChanged = errors.New("the operation changed during its lookup; looking it up again")

// Finish decides on a final step by the one proof rule ([proof.Prove])
// and, unless dryRun, applies the decision in one transaction. history
// lists the failed attempts before this one.
func (s *Settler) Finish(ctx context.Context, op ledger.Operation, step Step, history []proof.AttemptError, dryRun bool) (Settled, error) {
	// Two passes at most: a "done" the database refused because another
	// operation took the same record meanwhile, or because the row changed,
	// is decided again on the row as it now is.
	for pass := 0; ; pass++ {
		if q := step.Outcome.Query(); q.OpKey != "" && !proof.LookedUpAs(op, q) {
			return Settled{}, ErrOperationChanged
		}
		d, err := proof.Prove(ctx, s.DB, op, step.Outcome)
		if err != nil {
			return Settled{}, err
		}
		if dryRun {
			return Settled{Decision: d}, nil
		}
		now := s.Now()
		ev := proof.NewEvidence(op, proof.Lookup{
			Adapter: step.Adapter, Query: step.Query, Outcome: step.Outcome, Errors: history, At: now,
		}, d)
		applied, err := s.Reviews.Apply(ctx, op, d, ev, now)
		if err != nil && step.Outcome.Searched() && review.Unstorable(err) {
			// The answer itself cannot be written (the adapter let through
			// what the database refuses): retrying would fail forever, so
			// a ticket says why, without the records.
			return s.Finish(ctx, op, Unstorable(step, err), history, dryRun)
		}
		if err != nil {
			return Settled{}, err
		}
		if d.Done && !applied.Settled && pass == 0 {
			current, err := ledger.NewStore(s.DB).GetByID(ctx, op.ID)
			if err != nil {
				return Settled{}, err
			}
			if current.Status == ledger.StatusPending {
				op = current
				continue
			}
		}
		s.LogSettled(op, d, applied)
		return Settled{Decision: d, Applied: applied}, nil
	}
}

func (s *Settler) LogSettled(op ledger.Operation, d proof.Decision, applied review.Applied) {
	logger := s.Logger.With("op_key", LogKey(op), "provider", op.Provider)
	switch {
	case !applied.Settled:
		logger.Info("operation no longer pending; nothing to do")
	case d.Done:
		s.Metrics.Settled(providerLabel(s.Providers, op.Provider), metrics.OutcomeDone)
		logger.Info("operation done", "provider_record_id", d.ProviderRecordID)
	default:
		s.Metrics.Settled(providerLabel(s.Providers, op.Provider), metrics.OutcomeReview)
		s.Metrics.TicketOpened(string(d.Reason))
		logger.Info("review ticket opened", "ticket_id", applied.TicketID, "reason", d.Reason)
	}
}

// LogKey is an operation's op_key as logs show it: a workflow may have
// built it from the recipient ("welcome:jane@example.com"), which no log
// line carries.
func LogKey(op ledger.Operation) string { return providers.RedactText(op.OpKey, op.Recipient) }

// Unstorable is the final outcome for an answer the database refused to
// store: a failed lookup, whose evidence holds no records.
func Unstorable(step Step, err error) Step {
	step.Final = true
	step.Outcome = proof.Failed(fmt.Sprintf("the provider's answer could not be stored: %v", err))
	return step
}

// Exhausted returns the final outcome for a lookup whose budget ran out on
// step's error after attempts tries.
func Exhausted(step Step, attempts int, budget time.Duration) Step {
	step.Final = true
	step.Outcome = proof.Failed(fmt.Sprintf("%d attempt(s) failed within lookup_budget %s; last: %v", attempts, budget, step.Err))
	return step
}

// Backoff is the wait before retry number attempt (1-based): 1s, 2s, 4s, …
// up to a minute, with ±20% jitter so replicas do not retry in step.
func Backoff(attempt int) time.Duration {
	d := time.Minute
	if attempt < 7 {
		d = time.Second << (attempt - 1)
	}
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// providerLabel is the provider label of an operation's metrics: its
// provider's name when configured. The ledger's provider column is written
// by workflows, so anything else shares one label.
func providerLabel(configured map[string]*providers.Provider, name string) string {
	if configured[name] == nil {
		return metrics.UnconfiguredProvider
	}
	return name
}
