package jobs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"golang.org/x/sync/semaphore"

	"github.com/sweeper/sweeper/settle"
)

// LookupBatchSize is how many operations of one provider a lookup job
// holds at most: fewer when the sweep's page is smaller, or when the
// provider's rate limit allows fewer asks within its lookup_timeout. A
// job's writes — the decisions, the claims, its completion — share one
// transaction of about a dozen statements, so the statements per operation
// fall with the batch; the asks run concurrently, spaced by the provider's
// own concurrency cap.
const LookupBatchSize = 500

// LookupBatchArgs asks for operations of one provider to be looked up and
// settled. The sweep claims each operation (sweeper.lookup_claims) in the
// transaction that inserts the job, so no other job holds it meanwhile.
type LookupBatchArgs struct {
	Provider string     `json:"provider"`
	Ops      []QueuedOp `json:"ops"`
}

// Kind implements river.JobArgs.
func (LookupBatchArgs) Kind() string { return "lookup_batch" }

// QueueLookup is the queue lookups run on; river.max_workers sizes it.
const QueueLookup = "lookup"

// InsertOpts puts the job on the lookup queue. A job's River attempts count
// only its own failures (the database); each operation's lookup attempts
// travel in its QueuedOp, and a job that runs out of River attempts is
// discarded, its claims released and its operations claimed afresh by the
// next sweep.
func (LookupBatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueLookup, MaxAttempts: lookupBatchMaxAttempts}
}

// lookupBatchMaxAttempts bounds a job's own failures: with NextRetry's
// backoff, about twenty minutes of a database that refuses its writes.
const lookupBatchMaxAttempts = 25

// QueuedOp is one operation in a lookup job and where its lookup stands.
// The row itself is read when the job runs: a job's args are kept by River
// (and shown in River UI) for a day after it completes, and they carry no
// recipient or payload.
type QueuedOp struct {
	ID int64 `json:"id"`
	settle.Tries
	// NotBefore is when the operation may be asked again (a backoff, a
	// provider's Retry-After, a settle window).
	NotBefore time.Time `json:"not_before,omitzero"`
}

// LookupBatchWorker runs a job's operations through one step of their
// lookup ([settle.Settler.AskMany]) and writes every outcome in one
// transaction that also completes the job: the decisions
// ([settle.Settler.FinishBatch]), the claims released, and — for the
// operations still to be asked — one follow-up job holding them, due when
// the first of them is. A crash leaves all of it written or none (River
// then runs the job again). A job that learned nothing — every operation
// paced, or waiting for its time — snoozes instead, spending nothing.
type LookupBatchWorker struct {
	river.WorkerDefaults[LookupBatchArgs]
	settler *settle.Settler
	// inFlight bounds the operations this process's jobs hold at once
	// ([MaxOperationsInFlight]).
	inFlight *semaphore.Weighted
}

// MaxOperationsInFlight is how many operations one process's lookup jobs
// hold at once: four full jobs. A job waits for room before it reads its
// rows, so memory stays about the same whatever the backlog and however
// many River workers the lookup queue has. Four full jobs ask faster than
// the sweep hands a backlog on (docs/performance.md has the figures),
// and a slow provider's jobs are small: the sweep sizes them by what its
// rate limit allows within lookup_timeout.
const MaxOperationsInFlight = 4 * LookupBatchSize

// NewLookupBatchWorker returns the worker: the settler's database reads
// the operations and takes the transactions.
func NewLookupBatchWorker(settler *settle.Settler) *LookupBatchWorker {
	return &LookupBatchWorker{settler: settler, inFlight: semaphore.NewWeighted(MaxOperationsInFlight)}
}

// LookupOverhead is a lookup run's time beyond the provider call.
const LookupOverhead = 10 * time.Second

// Timeout gives a run room for its asks, which wait for the provider's
// slots and rate limit (at most lookup_timeout) and run concurrently
// (lookup_timeout each), and for the database; longer than that, the job
// is cancelled.
func (w *LookupBatchWorker) Timeout(*river.Job[LookupBatchArgs]) time.Duration {
	var longest time.Duration
	for _, p := range w.settler.Providers {
		longest = max(longest, p.Limits().LookupTimeout)
	}
	return 2*longest + LookupOverhead
}

// NextRetry spaces a job's own failures as lookups' (1s … 1m, jittered).
func (w *LookupBatchWorker) NextRetry(job *river.Job[LookupBatchArgs]) time.Time {
	return time.Now().Add(settle.Backoff(job.Attempt))
}

// queued is one operation of a run: its row, its state, and what this run
// made of it.
type queued struct {
	QueuedOp
	ask settle.Ask
	// final: its ask settled it; changed: its QueuedOp moved on (an
	// attempt, a first ask, a row to ask about again).
	final, changed bool
}

// Work implements river.Worker.
func (w *LookupBatchWorker) Work(ctx context.Context, job *river.Job[LookupBatchArgs]) error {
	// Room for the job's operations, waited for a few seconds at most —
	// within the run's own reserve beyond its asks (LookupOverhead), so
	// that waiting never cuts an ask short; without it, the job snoozes:
	// held back by this process, not by the provider, it spends no
	// attempt and records no error.
	n := w.room(len(job.Args.Ops))
	waitCtx, cancel := context.WithTimeout(ctx, LookupOverhead/2)
	err := w.inFlight.Acquire(waitCtx, n)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return river.JobSnooze(time.Second)
	}
	defer w.inFlight.Release(n)
	ops, gone, err := w.run(ctx, job.Args.Ops)
	if err != nil {
		return err
	}
	if len(ops) == 0 && len(gone) == 0 {
		return nil
	}
	if !learned(ops, gone) {
		// Nothing was learned: every operation was held back by pacing,
		// or waits for its time.
		return river.JobSnooze(max(time.Until(firstDue(ops)), time.Second))
	}
	return w.write(ctx, job, ops, gone)
}

// room is how much of [MaxOperationsInFlight] a run of n operations
// holds.
func (w *LookupBatchWorker) room(n int) int64 { return int64(min(n, MaxOperationsInFlight)) }

// run is one run of a job's operations, River's or a pass's in process:
// it reads their rows and asks about those that are due ([LookupBatchWorker.ask]).
// It returns the operations still pending, each with what follows its ask,
// and the ids of the others.
func (w *LookupBatchWorker) run(ctx context.Context, queuedOps []QueuedOp) ([]*queued, []int64, error) {
	ops, gone, err := w.read(ctx, queuedOps)
	if err != nil || len(ops) == 0 {
		return ops, gone, err
	}
	return ops, gone, w.ask(ctx, ops)
}

// learned reports whether a run learned anything: an operation settled,
// moved on or gone. A run that learned nothing — every operation held
// back by pacing, or waiting for its time — writes nothing.
func learned(ops []*queued, gone []int64) bool {
	return len(gone) > 0 || slices.ContainsFunc(ops, func(q *queued) bool { return q.final || q.changed })
}

// firstDue is when the first of ops may be asked again.
func firstDue(ops []*queued) time.Time {
	return slices.MinFunc(ops, func(a, b *queued) int { return a.NotBefore.Compare(b.NotBefore) }).NotBefore
}

// read returns the job's operations that are still pending, each with its
// row, and the ids of the others: confirmed by their workflow, settled, or
// deleted since the sweep handed them on.
func (w *LookupBatchWorker) read(ctx context.Context, queuedOps []QueuedOp) ([]*queued, []int64, error) {
	ids := make([]int64, len(queuedOps))
	for i, q := range queuedOps {
		ids[i] = q.ID
	}
	pending, err := w.settler.Pending(ctx, w.settler.DB, ids)
	if err != nil {
		return nil, nil, err
	}
	var ops []*queued
	var gone []int64
	for _, qo := range queuedOps {
		op, ok := pending[qo.ID]
		if !ok {
			gone = append(gone, qo.ID)
			continue
		}
		q := &queued{QueuedOp: qo}
		q.ask = settle.Ask{Op: op, Tries: &q.Tries}
		ops = append(ops, q)
	}
	return ops, gone, nil
}

// ask asks about the operations that are due, and turns what follows each
// into its place in the job: settled, or when it is due again.
func (w *LookupBatchWorker) ask(ctx context.Context, ops []*queued) error {
	now := time.Now()
	var due []*settle.Ask
	var dueOps []*queued
	for _, q := range ops {
		if q.NotBefore.After(now) {
			continue // waits for its backoff or Retry-After: carried as it is
		}
		due = append(due, &q.ask)
		dueOps = append(dueOps, q)
	}
	if err := w.settler.AskMany(ctx, due); err != nil {
		return err
	}
	now = time.Now()
	for _, q := range dueOps {
		switch next := q.ask.Next; next.Kind {
		case settle.ActionSettle:
			q.final = true
		case settle.ActionAskAgain:
			q.NotBefore, q.changed = now.Add(next.Wait), true
		case settle.ActionPace:
			q.NotBefore = now.Add(next.Wait)
		}
	}
	return nil
}

// write settles the final operations and writes everything the run leads
// to in one transaction, which completes the job: the decisions, the
// claims released, and one follow-up job holding the operations still to
// ask.
func (w *LookupBatchWorker) write(ctx context.Context, job *river.Job[LookupBatchArgs], ops []*queued, gone []int64) error {
	tx, err := w.settler.DB.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	settled, err := w.finish(ctx, tx, ops)
	if err != nil {
		return err
	}
	next, due, released := carry(ops, gone)
	var heldOps, heldBy []int64
	if len(next) > 0 {
		client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
		if err != nil {
			return err
		}
		res, err := client.InsertTx(ctx, tx, LookupBatchArgs{Provider: job.Args.Provider, Ops: next}, &river.InsertOpts{ScheduledAt: due})
		if err != nil {
			return fmt.Errorf("lookup: queue the operations still to ask: %w", err)
		}
		for _, q := range next {
			heldOps, heldBy = append(heldOps, q.ID), append(heldBy, res.Job.ID)
		}
	}
	if err := hold(ctx, tx, heldOps, heldBy, released); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	for _, r := range settled {
		w.settler.LogSettled(r)
	}
	return nil
}

// finish decides on the operations of ops whose lookup ended and writes
// the decisions in tx ([settle.Settler.FinishBatch]), returning what
// happened to them once tx commits. An operation whose row was rewritten
// during its lookup is not settled: the answer was for what it was, so it
// is asked again, spending nothing.
func (w *LookupBatchWorker) finish(ctx context.Context, tx pgx.Tx, ops []*queued) ([]settle.Settled, error) {
	var finals []settle.Final
	var finalOps []*queued
	for _, q := range ops {
		if q.final {
			finals = append(finals, settle.Final{Op: q.ask.Op, Step: q.ask.Next.Step, History: q.Errors})
			finalOps = append(finalOps, q)
		}
	}
	results, err := w.settler.FinishBatch(ctx, tx, finals)
	if err != nil {
		return nil, err
	}
	settled := make([]settle.Settled, 0, len(results))
	for i, r := range results {
		if r.Changed {
			q := finalOps[i]
			q.final, q.changed, q.NotBefore = false, true, time.Time{}
			continue
		}
		settled = append(settled, r)
	}
	return settled, nil
}

// carry is what a run leaves to the next: the operations still to ask,
// when the first of them is due, and the ids whose claims are released —
// those settled and those gone.
func carry(ops []*queued, gone []int64) (next []QueuedOp, due time.Time, released []int64) {
	released = slices.Clone(gone)
	for _, q := range ops {
		if q.final {
			released = append(released, q.ID)
			continue
		}
		next = append(next, q.QueuedOp)
		if due.IsZero() || q.NotBefore.Before(due) {
			due = q.NotBefore
		}
	}
	return next, due, released
}
