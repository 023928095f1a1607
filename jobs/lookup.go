package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
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
		UniqueOpts: river.UniqueOpts{
			ByArgs: true,
			ByState: []rivertype.JobState{
				rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
				rivertype.JobStateRunning, rivertype.JobStateScheduled,
			},
		},
	}
}

// LookupWorker settles one operation per job.
//
// Each run is one attempt. A transient error is returned to River, which
// retries it after [LookupWorker.NextRetry]; a rate-limited answer snoozes
// the job for the provider's delay without using an attempt. Once the
// provider's lookup_budget (counted from when the sweep enqueued the job)
// cannot fit another try, the operation gets a lookup_failed ticket whose
// evidence lists every attempt.
type LookupWorker struct {
	river.WorkerDefaults[LookupArgs]
	settler *Settler
	store   func() *ledger.Store
}

// NewLookupWorker returns the worker. db reads operations.
func NewLookupWorker(settler *Settler, db ledger.DB) *LookupWorker {
	return &LookupWorker{settler: settler, store: func() *ledger.Store { return ledger.NewStore(db) }}
}

// Timeout gives each run room for the provider's wait for a slot and the
// rate limiter (at most lookup_timeout), the call (lookup_timeout) and the
// database; longer than that, the job is cancelled.
func (w *LookupWorker) Timeout(*river.Job[LookupArgs]) time.Duration {
	return 2*w.maxLookupTimeout() + lookupOverhead
}

// lookupOverhead is a run's time beyond the provider call.
const lookupOverhead = 10 * time.Second

func (w *LookupWorker) maxLookupTimeout() time.Duration {
	var longest time.Duration
	for _, p := range w.settler.Providers {
		longest = max(longest, p.LookupTimeout)
	}
	return longest
}

// NextRetry spaces attempts exponentially (1s, 2s, 4s, … 1m, jittered).
func (w *LookupWorker) NextRetry(job *river.Job[LookupArgs]) time.Time {
	return time.Now().Add(backoff(job.Attempt))
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

	step := w.settler.Attempt(ctx, op)
	if !step.Final {
		if ctx.Err() != nil {
			return ctx.Err() // shutdown or job timeout: not the provider's answer
		}
		budget := w.budget(op)
		deadline := job.CreatedAt.Add(budget)
		now := time.Now()
		// A Retry-After of zero or in the past would make the job spin.
		wait := max(step.RetryAfter, time.Second)
		lastAttempt := job.Attempt >= job.MaxAttempts
		switch {
		case step.Class == providers.ClassRateLimited && now.Add(wait).Before(deadline):
			return river.JobSnooze(wait)
		case step.Class == providers.ClassTransient && now.Add(backoff(job.Attempt)).Before(deadline) && !lastAttempt:
			return fmt.Errorf("lookup %s: %w", op.OpKey, step.Err)
		}
		step = Exhausted(step, job.Attempt, budget)
	}
	history := attemptHistory(job, step)
	_, err = w.settler.Finish(ctx, op, step, history, false)
	return err
}

func (w *LookupWorker) budget(op ledger.Operation) time.Duration {
	if p := w.settler.Providers[op.Provider]; p != nil {
		return p.LookupBudget
	}
	return 0
}

// attemptHistory turns River's record of failed runs, plus the final step's
// own error, into the evidence's error list.
func attemptHistory(job *river.Job[LookupArgs], step Step) []review.AttemptError {
	var history []review.AttemptError
	for _, e := range job.Errors {
		history = append(history, review.AttemptError{At: e.At, Attempt: e.Attempt, Class: "transient", Error: e.Error})
	}
	if step.Err != nil {
		history = append(history, review.AttemptError{
			At: time.Now(), Attempt: job.Attempt, Class: step.Class.String(), Error: step.Err.Error(),
		})
	}
	return history
}
