package settle

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// Settler looks operations up and applies what the lookups prove. The
// River lookup worker and `sweeper sweep --once` share it.
type Settler struct {
	Providers map[string]*providers.Provider
	// DB reads the ledger (who already holds a record) and takes the
	// transactions of [Settler.Finish].
	DB review.TxBeginner
	// Policy is the policy tickets open under, unless Live is set.
	Policy review.Policy
	// Live, when set, is read for the policy at each batch instead of
	// Policy: a configuration reload changes it.
	Live   *Policies
	Logger *slog.Logger
	Now    func() time.Time
	// Metrics counts settlements and tickets once they commit; nil counts
	// none.
	Metrics *metrics.Metrics
	// ledger is the table the operations live in: [NewSettler]'s.
	ledger *ledger.Table
}

// NewSettler returns s settling the operations of table t. t is required
// ([ledger.Native] for sweeper's own table): there is no default, and nil
// panics. A Settler not made here has no table and panics on first use.
func NewSettler(t *ledger.Table, s Settler) *Settler {
	s.ledger = required("settle.NewSettler", t)
	return &s
}

// required is t, or a panic naming who was given none.
func required(who string, t *ledger.Table) *ledger.Table {
	if t == nil {
		panic(who + ": nil ledger table (pass ledger.Native() or the configured table)")
	}
	return t
}

// policy is the review policy now: Live's, else Policy.
func (s *Settler) policy() review.Policy {
	if s.Live != nil {
		return s.Live.Review()
	}
	return s.Policy
}

// table is the table the operations live in.
func (s *Settler) table() *ledger.Table { return s.ledger }

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

// Attempt makes one lookup for op. An operation the ledger found invalid
// ([ledger.Operation.Invalid]), whose provider is not configured, or that
// lacks the fields a lookup needs, is final at once (invalid_operation); so are an unsupported provider and a permanent
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
	if op.Invalid != "" {
		// A row the ledger read but sweeper cannot look up (a NULL, an
		// over-long value): its own ticket, before anything quotes it.
		step := &Step{Final: true, Outcome: proof.Invalid(op.Invalid)}
		if p != nil {
			step.Adapter = p.Kind
		}
		return nil, providers.Query{}, step
	}
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
		lim := p.Limits()
		if settled := op.FirstAttemptAt.Add(lim.SettleWindow); len(records) == 0 && now.Before(settled) {
			// The provider's search may not list the record yet: ask again
			// once the window has passed, spending no attempt or budget;
			// only an empty answer after it is not_found.
			step.Class, step.RetryAfter = providers.ClassPaced, settled.Sub(now)
			step.Err = fmt.Errorf("%s: no record yet, but its search may lag until %s (settle_window %s after the first attempt)",
				op.Provider, settled.UTC().Format(time.RFC3339), lim.SettleWindow)
			return step
		}
		if until := op.FirstAttemptAt.Add(lim.InFlightFor); proof.InFlight(records) && now.Before(until) {
			// The provider is still making the effect: neither done nor
			// not_found. Asked again, spending no attempt or budget, until
			// in_flight_for has passed; only then an in_flight ticket.
			step.Class, step.RetryAfter = providers.ClassPaced, InFlightWait(now.Sub(op.FirstAttemptAt), until.Sub(now))
			step.Err = fmt.Errorf("%s: the provider reports the effect still in flight; asked again until %s (in_flight_for %s after the first attempt)",
				op.Provider, until.UTC().Format(time.RFC3339), lim.InFlightFor)
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

// providerLabel is the provider label of an operation's metrics: its
// provider's name when configured. The ledger's provider column is written
// by workflows, so anything else shares one label.
func providerLabel(configured map[string]*providers.Provider, name string) string {
	if configured[name] == nil {
		return metrics.UnconfiguredProvider
	}
	return name
}
