package jobs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"golang.org/x/sync/semaphore"

	"github.com/sweeper/sweeper/internal/settle"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// LookupBatchSize is how many operations of one provider a lookup job
// holds at most: fewer when the sweep's page is smaller, or when the
// provider's rate limit allows fewer asks within its lookup_timeout. A
// job's writes — the decisions, the claims, its completion — share one
// transaction of about a dozen statements, so the statements per operation
// fall with the batch; the asks run concurrently, spaced by the provider's
// own concurrency cap.
const LookupBatchSize = 500

// maxHistory is how many failed attempts of one operation a job carries
// (the latest): the evidence of a lookup_failed ticket lists them.
const maxHistory = 20

// LookupBatchArgs asks for operations of one provider to be looked up and
// settled. The sweep claims each operation (sweeper.lookup_claims) in the
// transaction that inserts the job, so no other job holds it meanwhile.
type LookupBatchArgs struct {
	Provider string     `json:"provider"`
	Ops      []QueuedOp `json:"ops"`
}

// Kind implements river.JobArgs.
func (LookupBatchArgs) Kind() string { return "lookup_batch" }

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
	// Attempts counts the asks that failed transiently; the next is
	// Attempts+1. A rate-limited or paced ask is none.
	Attempts int `json:"attempts,omitempty"`
	// FirstAsked is when the provider was first asked for the operation —
	// its lookup budget starts there — and how long the provider had been
	// down in all by then; nil until it is asked.
	FirstAsked *asked `json:"first_asked,omitempty"`
	// NotBefore is when the operation may be asked again (a backoff, a
	// provider's Retry-After, a settle window).
	NotBefore time.Time `json:"not_before,omitzero"`
	// Errors are the latest failed attempts, at most maxHistory.
	Errors []review.AttemptError `json:"errors,omitempty"`
}

// LookupBatchWorker looks up a job's operations, asking the provider for
// all of them at once, and writes every outcome in one transaction that
// also completes the job: the decisions, the claims released, and — for
// the operations still to be asked — one follow-up job holding them. A
// crash leaves all of it written or none (River then runs the job again).
//
// Per operation, the rules are the single lookup's: own pacing is never a
// failure (a job whose every operation is paced snoozes, spending nothing);
// a transient error is asked again after settle.Backoff(attempts), a rate-limited
// one after the provider's Retry-After, while the provider's lookup_budget
// — counted from the first ask, leaving out the time the provider was down
// — allows; past it, a lookup_failed ticket lists the attempts.
type LookupBatchWorker struct {
	river.WorkerDefaults[LookupBatchArgs]
	settler *settle.Settler
	db      review.DB
	policy  review.Policy
	// inFlight bounds the operations this process's jobs hold at once
	// ([MaxOperationsInFlight]).
	inFlight *semaphore.Weighted
}

// MaxOperationsInFlight is how many operations one process's lookup jobs
// hold at once: four full jobs. A job waits for room before it reads its
// rows, so memory stays about the same whatever the backlog and however
// many River workers the lookup queue has. Four full jobs ask faster than
// the sweep hands a backlog on (README, "Performance", has the figures),
// and a slow provider's jobs are small: the sweep sizes them by what its
// rate limit allows within lookup_timeout.
const MaxOperationsInFlight = 4 * LookupBatchSize

// NewLookupBatchWorker returns the worker: db reads the operations and
// takes the transactions; tickets open under policy.
func NewLookupBatchWorker(settler *settle.Settler, db review.DB, policy review.Policy) *LookupBatchWorker {
	return &LookupBatchWorker{settler: settler, db: db, policy: policy, inFlight: semaphore.NewWeighted(MaxOperationsInFlight)}
}

// Timeout gives a run room for its asks, which wait for the provider's
// slots and rate limit (at most lookup_timeout) and run concurrently
// (lookup_timeout each), and for the database.
func (w *LookupBatchWorker) Timeout(*river.Job[LookupBatchArgs]) time.Duration {
	return (&LookupWorker{settler: w.settler}).Timeout(nil)
}

// NextRetry spaces a job's own failures as lookups' (1s … 1m, jittered).
func (w *LookupBatchWorker) NextRetry(job *river.Job[LookupBatchArgs]) time.Time {
	return time.Now().Add(settle.Backoff(job.Attempt))
}

// queued is one operation of a run: its row, its state, and what this run
// made of it.
type queued struct {
	QueuedOp
	op   ledger.Operation
	step settle.Step
	// asked: this run asked for it; final: its step is an outcome to write.
	asked, final bool
	// changed: its QueuedOp moved on (an attempt, a first ask, a wait).
	changed bool
}

// Work implements river.Worker.
func (w *LookupBatchWorker) Work(ctx context.Context, job *river.Job[LookupBatchArgs]) error {
	// Room for the job's operations, waited for a few seconds at most —
	// within the run's own reserve beyond its asks (LookupOverhead), so
	// that waiting never cuts an ask short; without it, the job snoozes:
	// held back by this process, not by the provider, it spends no
	// attempt and records no error.
	n := int64(min(len(job.Args.Ops), MaxOperationsInFlight))
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
	ops, gone, err := w.read(ctx, job.Args.Ops)
	if err != nil {
		return err
	}
	if len(ops) == 0 && len(gone) == 0 {
		return nil
	}
	if err := w.ask(ctx, job.Args.Provider, ops); err != nil {
		return err
	}
	final, carried, snooze := 0, 0, time.Duration(0)
	for _, q := range ops {
		switch {
		case q.final:
			final++
		case q.changed:
			carried++
		default:
			carried++
			if wait := time.Until(q.NotBefore); snooze == 0 || wait < snooze {
				snooze = wait
			}
		}
	}
	if final == 0 && len(gone) == 0 && !slices.ContainsFunc(ops, func(q *queued) bool { return q.changed }) {
		// Nothing was learned: every operation was held back by this
		// process's own pacing, or waits for its time. No attempt, no error,
		// no budget.
		return river.JobSnooze(max(snooze, time.Second))
	}
	return w.write(ctx, job, ops, gone)
}

// read returns the job's operations that are still pending, each with its
// row, and the ids of the others: confirmed by their workflow, settled, or
// deleted since the sweep handed them on.
func (w *LookupBatchWorker) read(ctx context.Context, queuedOps []QueuedOp) ([]*queued, []int64, error) {
	ids := make([]int64, len(queuedOps))
	for i, q := range queuedOps {
		ids[i] = q.ID
	}
	rows, err := ledger.NewStore(w.db).GetByIDs(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[int64]ledger.Operation, len(rows))
	for _, op := range rows {
		byID[op.ID] = op
	}
	var ops []*queued
	var gone []int64
	for _, q := range queuedOps {
		op, ok := byID[q.ID]
		if !ok || op.Status != ledger.StatusPending {
			gone = append(gone, q.ID)
			continue
		}
		ops = append(ops, &queued{QueuedOp: q, op: op})
	}
	return ops, gone, nil
}

// ask asks the provider about every operation that is due, and sets each
// one's step and what it leads to.
func (w *LookupBatchWorker) ask(ctx context.Context, provider string, ops []*queued) error {
	s := w.settler
	now := time.Now()
	var due []*queued
	var queries []providers.Query
	var p *providers.Provider
	for _, q := range ops {
		if q.NotBefore.After(now) {
			continue // waits for its backoff or Retry-After: carried as it is
		}
		prov, query, refused := s.Prepare(q.op)
		if refused != nil {
			q.step, q.final = *refused, true
			continue
		}
		p = prov
		due = append(due, q)
		queries = append(queries, query)
	}
	if len(due) == 0 {
		return nil
	}
	askedAt := time.Now()
	results := lookupAll(ctx, p, queries)
	if ctx.Err() != nil {
		return ctx.Err() // shutdown or the job's timeout: not the provider's answer
	}
	var down *time.Duration // the provider's downtime, read once a run
	downTotal := func() time.Duration {
		if down == nil {
			d := p.DownTotal(ctx)
			down = &d
		}
		return *down
	}
	for i, q := range due {
		q.asked = true
		q.step = s.Answer(ctx, q.op, p, queries[i], results[i].records, results[i].err)
		if q.step.Final {
			if q.step.Err != nil {
				q.Errors = appendHistory(q.Errors, review.AttemptError{
					At: time.Now(), Attempt: q.Attempts + 1, Class: q.step.Class.String(), Error: q.step.Err.Error()})
			}
			q.final = true
			continue
		}
		wait := max(q.step.RetryAfter, time.Second) // a zero Retry-After would spin
		if q.step.Class == providers.ClassPaced {
			// Held back by this process's own pacing, or a settle window
			// still open: no attempt, no error, no budget.
			q.NotBefore = time.Now().Add(wait)
			continue
		}
		if q.FirstAsked == nil {
			q.FirstAsked = &asked{At: askedAt, Down: downTotal()}
		}
		q.changed = true
		deadline := q.FirstAsked.At.Add(p.LookupBudget + downCredit(downTotal()-q.FirstAsked.Down))
		attempt := q.Attempts + 1
		if q.step.Class == providers.ClassTransient {
			wait = settle.Backoff(attempt)
		}
		now := time.Now()
		switch {
		case q.step.Class == providers.ClassRateLimited && now.Add(wait).Before(deadline):
			q.NotBefore = now.Add(wait)
		case q.step.Class == providers.ClassTransient && now.Add(wait).Before(deadline) && attempt < lookupMaxAttempts:
			q.Attempts = attempt
			q.Errors = appendHistory(q.Errors, review.AttemptError{At: now, Attempt: attempt, Class: "transient", Error: q.step.Err.Error()})
			q.NotBefore = now.Add(wait)
		default:
			q.step = settle.Exhausted(q.step, attempt, p.LookupBudget)
			q.Errors = appendHistory(q.Errors, review.AttemptError{At: now, Attempt: attempt, Class: q.step.Class.String(), Error: q.step.Err.Error()})
			q.final = true
		}
	}
	return nil
}

// appendHistory appends e, keeping the latest maxHistory.
func appendHistory(history []review.AttemptError, e review.AttemptError) []review.AttemptError {
	e.Error = review.StorableText(e.Error) // it travels in the next job's args (jsonb)
	history = append(history, e)
	return history[max(0, len(history)-maxHistory):]
}

// answer is one provider answer: records or an error.
type answer struct {
	records []providers.Record
	err     error
}

// lookupAll asks p about every query at once and returns the answers in
// the queries' order: in requests of p's batch size ([providers.Provider.MaxBatch];
// one query each for an adapter that does not batch), sent side by side.
// Each request goes through the provider's own rate limit, concurrency cap
// and health, and each answer through the checks a single lookup's gets.
func lookupAll(ctx context.Context, p *providers.Provider, queries []providers.Query) []answer {
	answers := make([]answer, len(queries))
	size := max(1, p.MaxBatch())
	var wg sync.WaitGroup
	for start := 0; start < len(queries); start += size {
		chunk := queries[start:min(start+size, len(queries))]
		wg.Go(func() {
			for i, r := range p.LookupMany(ctx, chunk) {
				answers[start+i] = answer{records: r.Records, err: r.Err}
			}
		})
	}
	wg.Wait()
	return answers
}

// write decides the final operations and writes everything the run leads
// to in one transaction, which completes the job.
func (w *LookupBatchWorker) write(ctx context.Context, job *river.Job[LookupBatchArgs], ops []*queued, gone []int64) error {
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	var final []*queued
	for _, q := range ops {
		if q.final {
			final = append(final, q)
		}
	}
	settled, err := w.settle(ctx, tx, final)
	if err != nil {
		return err
	}

	// What is left goes on in one follow-up job, due when its first
	// operation is.
	var next LookupBatchArgs
	var due time.Time
	released := slices.Clone(gone)
	for _, q := range ops {
		if q.final {
			released = append(released, q.ID)
			continue
		}
		next.Ops = append(next.Ops, q.QueuedOp)
		if due.IsZero() || q.NotBefore.Before(due) {
			due = q.NotBefore
		}
	}
	var heldOps, heldBy []int64
	if len(next.Ops) > 0 {
		client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
		if err != nil {
			return err
		}
		next.Provider = job.Args.Provider
		res, err := client.InsertTx(ctx, tx, next, &river.InsertOpts{ScheduledAt: due})
		if err != nil {
			return fmt.Errorf("lookup: queue the operations still to ask: %w", err)
		}
		for _, q := range next.Ops {
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
		w.settler.LogSettled(r.op, r.Decision, r.Applied)
	}
	return nil
}

// settledOp is one final operation and what was written for it.
type settledOp struct {
	op ledger.Operation
	settle.Settled
}

// settle decides the final operations by the settle rule and writes the
// decisions in tx. A done the database refused — another operation took
// the record meanwhile, or one of this batch did — is decided again on the
// row as it now is, once, as [Settler.Finish] does; an answer the
// database cannot store becomes a lookup_failed ticket saying so.
func (w *LookupBatchWorker) settle(ctx context.Context, tx pgx.Tx, final []*queued) ([]settledOp, error) {
	var out []settledOp
	reviews := review.NewStore(tx, w.policy)
	for pass := 0; len(final) > 0; pass++ {
		proofs := make([]review.Proof, len(final))
		for i, q := range final {
			proofs[i] = review.Proof{Op: q.op, Outcome: q.step.Outcome}
		}
		decisions, err := review.ProveBatch(ctx, tx, proofs)
		if err != nil {
			return nil, err
		}
		now := w.settler.Now()
		items := make([]review.Item, len(final))
		for i, q := range final {
			items[i] = review.Item{Op: q.op, Decision: decisions[i], Now: now, Evidence: review.NewEvidence(q.op, review.Lookup{
				Adapter: q.step.Adapter, Query: q.step.Query, Outcome: q.step.Outcome, Errors: q.Errors, At: now,
			}, decisions[i])}
		}
		results, err := reviews.ApplyBatch(ctx, items)
		if err != nil {
			return nil, err
		}
		var again, refused []*queued
		for i, q := range final {
			r := results[i]
			switch {
			case r.Err != nil && q.step.Outcome.Searched() && review.Unstorable(r.Err):
				q.step = settle.Unstorable(q.step, r.Err)
				again = append(again, q)
			case r.Err != nil:
				return nil, fmt.Errorf("lookup of %s: %w", settle.LogKey(q.op), r.Err)
			case decisions[i].Done && !r.Applied.Settled && pass == 0:
				refused = append(refused, q)
			default:
				out = append(out, settledOp{op: q.op, Settled: settle.Settled{Decision: decisions[i], Applied: r.Applied}})
			}
		}
		if len(refused) > 0 {
			current, err := w.reread(ctx, tx, refused)
			if err != nil {
				return nil, err
			}
			for _, q := range refused {
				op, ok := current[q.ID]
				switch {
				case !ok || op.Status != ledger.StatusPending:
					// Confirmed by its workflow or settled meanwhile.
					out = append(out, settledOp{op: q.op, Settled: settle.Settled{Decision: review.Decision{Done: true}}})
				case !review.LookedUpAs(op, q.step.Outcome.Query()):
					// The row changed (ErrOperationChanged): the answer was
					// for what it was, so it is asked again, spending nothing.
					q.op, q.final, q.changed, q.NotBefore = op, false, true, time.Time{}
				default:
					q.op = op
					again = append(again, q)
				}
			}
		}
		final = again
	}
	return out, nil
}

// reread returns the current rows of ops, by id.
func (w *LookupBatchWorker) reread(ctx context.Context, tx pgx.Tx, ops []*queued) (map[int64]ledger.Operation, error) {
	ids := make([]int64, len(ops))
	for i, q := range ops {
		ids[i] = q.ID
	}
	rows, err := ledger.NewStore(tx).GetByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]ledger.Operation, len(rows))
	for _, op := range rows {
		byID[op.ID] = op
	}
	return byID, nil
}
