package settle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

// MaxAttempts bounds the asks of one operation that may fail transiently.
// It is high on purpose: the provider's lookup_budget, not an attempt
// count, ends the retries.
const MaxAttempts = 1000

// MaxDownCredit is how much of a provider's downtime an operation's
// lookup budget is extended by, at most. Up to it, an outage spends no
// budget and opens no lookup_failed ticket. Beyond it the budget runs
// again, so that no operation waits forever on its own; an operation that
// ends so is looked up again, with every lookup_failed ticket of its
// provider, when the provider answers. (A provider down longer than its
// max_outage gives all its waiting operations to review at once:
// [Outages].)
const MaxDownCredit = time.Hour

// maxHistory is how many failed attempts of one operation [Tries] keeps
// (the latest): the evidence of a lookup_failed ticket lists them.
const maxHistory = 20

// downCredit is the downtime an operation's budget is extended by.
func downCredit(down time.Duration) time.Duration { return min(max(down, 0), MaxDownCredit) }

// Asked is when the provider was first asked for an operation — its
// lookup budget starts there — and how long the provider had been down in
// all by then.
type Asked struct {
	At   time.Time     `json:"at"`
	Down time.Duration `json:"down_ns"`
}

// Tries is where one operation's lookup stands between its asks: what
// [Budget.Next] decides on and records. Its JSON form travels in River
// job args.
type Tries struct {
	// Attempts counts the asks that failed transiently; the next is
	// Attempts+1. A rate-limited or paced ask is none.
	Attempts int `json:"attempts,omitempty"`
	// FirstAsked is when the budget started; nil until the provider is
	// asked and does not answer for good.
	FirstAsked *Asked `json:"first_asked,omitempty"`
	// Errors are the latest failed attempts, at most maxHistory.
	Errors []proof.AttemptError `json:"errors,omitempty"`
}

// record appends a failed attempt, keeping the latest maxHistory.
func (t *Tries) record(at time.Time, attempt int, class string, err error) {
	// The text travels in job args and evidence (jsonb).
	t.Errors = append(t.Errors, proof.AttemptError{At: at, Attempt: attempt, Class: class, Error: proof.StorableText(err.Error())})
	t.Errors = t.Errors[max(0, len(t.Errors)-maxHistory):]
}

// Budget is one provider's lookup budget: how long an operation's lookup
// may go on asking after its first ask, leaving out the time the provider
// was down (up to [MaxDownCredit]), and for at most [MaxAttempts]
// transient failures. The River lookup job and `sweep --once` decide by
// its [Budget.Next] alike.
type Budget struct {
	// Length is the provider's lookup_budget.
	Length time.Duration
	// DownTotal reads how long the provider has been down in all
	// ([providers.Provider.DownTotal]); nil: never down.
	DownTotal func() time.Duration
}

// BudgetOf is p's budget, its downtime read through ctx; the zero Budget
// for no provider.
func BudgetOf(ctx context.Context, p *providers.Provider) Budget {
	if p == nil {
		return Budget{}
	}
	return Budget{Length: p.Limits().LookupBudget, DownTotal: func() time.Duration { return p.DownTotal(ctx) }}
}

func (b Budget) down() time.Duration {
	if b.DownTotal == nil {
		return 0
	}
	return b.DownTotal()
}

// ActionKind is what follows an ask.
type ActionKind int

const (
	// ActionSettle: the lookup has ended; decide on Action.Step.
	ActionSettle ActionKind = iota
	// ActionAskAgain: the provider failed transiently or rate-limited the ask,
	// and the budget allows another; ask again after Action.Wait.
	ActionAskAgain
	// ActionPace: the provider was not asked — this process's own pacing, or a
	// provider down for the cluster — or its answer cannot be taken yet (a
	// settle window, a record in flight); ask again after Action.Wait.
	// Nothing was spent.
	ActionPace
)

// Action is what [Budget.Next] decides.
type Action struct {
	Kind ActionKind
	// Step is the final step to decide on, for ActionSettle: the answer's own,
	// or — the budget or the attempts spent — a failed lookup that opens
	// a lookup_failed ticket listing the attempts ([Exhausted]). For
	// ActionPace it is the paced step, whose Err says why.
	Step Step
	// Wait is how long to wait before asking again, for ActionAskAgain and
	// ActionPace.
	Wait time.Duration
}

// Next decides what follows step, the answer to an ask made at asked, for
// an operation whose lookup stands at t, at now, and records in t what
// the ask spent:
//
//   - a final step is settled; its error, if any, is recorded;
//   - a paced step is asked again after its delay (at least a second),
//     spending nothing;
//   - otherwise the budget starts, if it has not, at asked. A rate-limited
//     step is asked again after the provider's delay (at least a second)
//     and a transient one after [Backoff] — an attempt, recorded — while
//     that falls within the budget (and, for a transient one, the
//     attempts stay below [MaxAttempts]); else the lookup ends as
//     [Exhausted], recorded.
func (b Budget) Next(step Step, t *Tries, asked, now time.Time) Action {
	if step.Final {
		if step.Err != nil {
			t.record(now, t.Attempts+1, step.Class.String(), step.Err)
		}
		return Action{Kind: ActionSettle, Step: step}
	}
	// A Retry-After of zero or in the past would make the lookup spin.
	wait := max(step.RetryAfter, time.Second)
	if step.Class == providers.ClassPaced {
		return Action{Kind: ActionPace, Wait: wait, Step: step}
	}
	down := b.down()
	if t.FirstAsked == nil {
		t.FirstAsked = &Asked{At: asked, Down: down}
	}
	deadline := t.FirstAsked.At.Add(b.Length + downCredit(down-t.FirstAsked.Down))
	attempt := t.Attempts + 1
	if step.Class == providers.ClassTransient {
		wait = Backoff(attempt)
	}
	switch {
	case step.Class == providers.ClassRateLimited && now.Add(wait).Before(deadline):
		return Action{Kind: ActionAskAgain, Wait: wait}
	case step.Class == providers.ClassTransient && now.Add(wait).Before(deadline) && attempt < MaxAttempts:
		t.Attempts = attempt
		t.record(now, attempt, step.Class.String(), step.Err)
		return Action{Kind: ActionAskAgain, Wait: wait}
	}
	step = Exhausted(step, attempt, b.Length)
	t.record(now, attempt, step.Class.String(), step.Err)
	return Action{Kind: ActionSettle, Step: step}
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
