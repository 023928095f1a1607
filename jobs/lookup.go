package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/sweeper/sweeper/internal/settle"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

// QueueLookup is the queue lookups run on; river.max_workers sizes it.
const QueueLookup = "lookup"

// lookupMaxAttempts is high on purpose: the provider's lookup_budget, not an
// attempt count, ends the retries.
const lookupMaxAttempts = 1000

// LookupArgs asks for one operation to be looked up and settled.
type LookupArgs struct {
	OperationID int64 `json:"operation_id" river:"unique"`
}

// Kind implements river.JobArgs.
func (LookupArgs) Kind() string { return "lookup" }

// InsertOpts makes a lookup unique by operation while it is unfinished: a
// second sweep while lookups run adds nothing, and once a lookup has
// finished a later sweep may look again (the row is then settled and is
// not scanned anyway).
func (LookupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueLookup,
		MaxAttempts: lookupMaxAttempts,
		UniqueOpts:  uniqueWhileUnfinished,
	}
}

// LookupWorker settles one operation per job.
//
// Each run that asks the provider is one attempt. A transient error is
// returned to River, which retries it after [LookupWorker.NextRetry]; a
// rate-limited answer snoozes the job for the provider's delay without
// using an attempt; a run this process's own rate limit or concurrency cap
// held back (paced) snoozes too, and spends no budget. Once the provider's
// lookup_budget — counted from the first time a run asked the provider —
// cannot fit another try, the operation gets a lookup_failed ticket whose
// evidence lists every attempt.
type LookupWorker struct {
	river.WorkerDefaults[LookupArgs]
	settler *settle.Settler
	store   func() *ledger.Store
}

// NewLookupWorker returns the worker. db reads operations.
func NewLookupWorker(settler *settle.Settler, db ledger.DB) *LookupWorker {
	return &LookupWorker{settler: settler, store: func() *ledger.Store { return ledger.NewStore(db) }}
}

// Timeout gives each run room for the provider's wait for a slot and the
// rate limiter (at most lookup_timeout), the call (lookup_timeout) and the
// database; longer than that, the job is cancelled.
func (w *LookupWorker) Timeout(*river.Job[LookupArgs]) time.Duration {
	return 2*w.maxLookupTimeout() + LookupOverhead
}

// LookupOverhead is a lookup run's time beyond the provider call.
const LookupOverhead = 10 * time.Second

func (w *LookupWorker) maxLookupTimeout() time.Duration {
	var longest time.Duration
	for _, p := range w.settler.Providers {
		longest = max(longest, p.LookupTimeout)
	}
	return longest
}

// NextRetry spaces attempts exponentially (1s, 2s, 4s, … 1m, jittered).
func (w *LookupWorker) NextRetry(job *river.Job[LookupArgs]) time.Time {
	return time.Now().Add(settle.Backoff(job.Attempt))
}

// Work implements river.Worker.
func (w *LookupWorker) Work(ctx context.Context, job *river.Job[LookupArgs]) error {
	op, err := w.store().GetByID(ctx, job.Args.OperationID)
	if errors.Is(err, ledger.ErrNotFound) {
		return river.JobCancel(err) // the workflow deleted its row
	}
	if err != nil {
		return err
	}
	if op.Status != ledger.StatusPending {
		return nil // confirmed, rejected or settled meanwhile
	}

	askedAt := time.Now()
	step := w.settler.Attempt(ctx, op)
	if !step.Final {
		if ctx.Err() != nil {
			return ctx.Err() // shutdown or job timeout: not the provider's answer
		}
		if step.Class == providers.ClassPaced {
			// Held back by this process's own pacing: the provider was not
			// asked, so no attempt, no error and no budget are spent.
			return river.JobSnooze(max(step.RetryAfter, time.Second))
		}
		budget := w.budget(op)
		deadline := budgetDeadline(ctx, job, w.settler.Providers[op.Provider], budget, askedAt)
		now := time.Now()
		// A Retry-After of zero or in the past would make the job spin.
		wait := max(step.RetryAfter, time.Second)
		lastAttempt := job.Attempt >= job.MaxAttempts
		switch {
		case step.Class == providers.ClassRateLimited && now.Add(wait).Before(deadline):
			return river.JobSnooze(wait)
		case step.Class == providers.ClassTransient && now.Add(settle.Backoff(job.Attempt)).Before(deadline) && !lastAttempt:
			return fmt.Errorf("lookup of operation %d: %w", op.ID, step.Err)
		}
		step = settle.Exhausted(step, job.Attempt, budget)
	}
	history := attemptHistory(job, step)
	_, err = w.settler.Finish(ctx, op, step, history, false)
	return err
}

// metadataAsked is the job metadata key holding when the provider was
// first asked for the operation — the start of its lookup budget — and how
// long the provider had been down in all by then.
const metadataAsked = "sweeper_first_asked"

// asked is the value under metadataAsked.
type asked struct {
	At   time.Time     `json:"at"`
	Down time.Duration `json:"down_ns"`
}

// MaxDownCredit is how much of a provider's downtime an operation's
// lookup budget is extended by, at most. Up to it, an outage spends no
// budget and opens no lookup_failed ticket. Beyond it the budget runs
// again, so that no operation waits forever on its own; an operation that
// ends so is looked up again, with every lookup_failed ticket of its
// provider, when the provider answers. (A provider down longer than its
// max_outage gives all its waiting operations to review at once:
// internal/settle's Outages.)
const MaxDownCredit = time.Hour

// downCredit is the downtime an operation's budget is extended by.
func downCredit(down time.Duration) time.Duration { return min(max(down, 0), MaxDownCredit) }

// budgetDeadline returns when the lookup budget of job runs out: budget
// after the first time one of its runs asked the provider (kept in the
// job's metadata, which River saves whether the run errs, snoozes or
// completes; now when no run has before), plus the time the provider has
// been down since (at most [MaxDownCredit]), during which its lookups
// waited and asked nobody. Time spent queued or paced before the first ask
// does not count either.
func budgetDeadline(ctx context.Context, job *river.Job[LookupArgs], p *providers.Provider, budget time.Duration, now time.Time) time.Time {
	down := time.Duration(0)
	if p != nil {
		down = p.DownTotal(ctx)
	}
	first := asked{At: now, Down: down}
	var md map[string]json.RawMessage
	var kept asked
	if json.Unmarshal(job.Metadata, &md) == nil && json.Unmarshal(md[metadataAsked], &kept) == nil && !kept.At.IsZero() {
		first = kept
	} else {
		// Outside a worker (a test's direct call) there is nowhere to keep it.
		_ = river.MetadataSet(ctx, metadataAsked, first)
	}
	return first.At.Add(budget + downCredit(down-first.Down))
}

func (w *LookupWorker) budget(op ledger.Operation) time.Duration {
	if p := w.settler.Providers[op.Provider]; p != nil {
		return p.LookupBudget
	}
	return 0
}

// attemptHistory turns River's record of failed runs, plus the final step's
// own error, into the evidence's error list.
func attemptHistory(job *river.Job[LookupArgs], step settle.Step) []proof.AttemptError {
	var history []proof.AttemptError
	for _, e := range job.Errors {
		history = append(history, proof.AttemptError{At: e.At, Attempt: e.Attempt, Class: "transient", Error: e.Error})
	}
	if step.Err != nil {
		history = append(history, proof.AttemptError{
			At: time.Now(), Attempt: job.Attempt, Class: step.Class.String(), Error: proof.StorableText(step.Err.Error()),
		})
	}
	return history
}
