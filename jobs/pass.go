package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
)

// ErrLeftPending: a pass in process left an operation pending rather than
// wait on pacing — a provider down for the cluster, a settle window still
// open — longer than it may ([Pass.MaxPaced]). Nothing was decided.
var ErrLeftPending = errors.New("left pending for a later pass")

// Pass is one sweep and every lookup it hands on, run in this process
// without River (`sweep --once`): the steps the workers take, by the
// workers' own code. The sweep's scan and pages, its claims
// (sweeper.lookup_claims) and its batches by provider, as
// [SweepWorker.Work] hands them on; then each batch through the runs of
// [LookupBatchWorker.Work] — its rows read, its due operations asked, what
// it learned written in one transaction with the claims of what settled
// released — the wait River would put before a batch's follow-up job slept
// here, until every operation of it is settled or left pending.
//
// A dry run ([Pass.DryRun]) claims nothing — the operations a job holds
// are left out by reading the claims — and writes every batch's decisions
// in one transaction that is rolled back once the pass ends: each
// decision is the real one, one record proving one operation across the
// whole pass by the database's own rule, and nothing is written.
type Pass struct {
	Sweep  *SweepWorker
	Lookup *LookupBatchWorker
	// DryRun decides and writes nothing.
	DryRun bool
	// Concurrency is how many batches run at once (at least one), as many
	// lookup jobs would on River's workers; each waits for room among
	// [MaxOperationsInFlight] as a job does.
	Concurrency int
	// MaxPaced is how long, in all, the pass waits for one operation's
	// provider to be asked before it leaves the operation pending
	// ([ErrLeftPending]).
	MaxPaced time.Duration
}

// PassOutcome is what became of one operation of a pass that was not
// left to a job: settled, or left pending with Err.
type PassOutcome struct {
	Op ledger.Operation
	// Settled is what was decided and written — in a dry run, written
	// and rolled back — when Err is nil. Settled.Applied.Settled is false
	// for an operation settled or confirmed by someone else meanwhile.
	Settled settle.Settled
	// Err says why the operation is left pending: [ErrLeftPending], or
	// the database's error.
	Err error
}

// PassResult counts what a pass saw.
type PassResult struct {
	// Scanned counts the stale operations the scan found.
	Scanned int
	// Held counts those a lookup job held: left to it.
	Held int
}

// Run runs the pass and returns once every operation it claimed is
// settled or left pending; report is told of each, one call at a time.
// Its error is the scan's (or the dry run's transaction's); an
// operation's own error is in its outcome.
func (p *Pass) Run(ctx context.Context, report func(PassOutcome)) (res PassResult, err error) {
	var mu sync.Mutex
	tell := func(o PassOutcome) {
		mu.Lock()
		defer mu.Unlock()
		report(o)
	}
	run := &passRun{Pass: p, tell: tell}
	if p.DryRun {
		if run.dry, err = p.Lookup.settler.DB.Begin(ctx); err != nil {
			return res, fmt.Errorf("dry run: %w", err)
		}
		defer run.dry.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing is ever committed
	} else if _, err := releaseLost(ctx, p.Sweep.db); err != nil {
		return res, err
	}
	work := make(chan LookupBatchArgs)
	var wg sync.WaitGroup
	for range max(p.Concurrency, 1) {
		wg.Go(func() {
			for batch := range work {
				run.batch(ctx, batch)
			}
		})
	}
	size := p.Sweep.batchSize()
	res.Scanned, err = p.Sweep.scanner.Scan(ctx, func(ctx context.Context, ops []ledger.Operation) error {
		batches, held, err := run.claim(ctx, ops, size)
		mu.Lock()
		res.Held += held
		mu.Unlock()
		for i, b := range batches {
			select {
			case work <- b:
			case <-ctx.Done():
				for _, left := range batches[i:] {
					run.release(ctx, left.Ops)
				}
				return ctx.Err()
			}
		}
		return err
	})
	close(work)
	wg.Wait()
	return res, err
}

// passRun is one run of a [Pass].
type passRun struct {
	*Pass
	tell func(PassOutcome)
	// dry is a dry run's transaction, which every write of the pass goes
	// into and which is never committed; dryMu takes turns on it.
	dry   pgx.Tx
	dryMu sync.Mutex
}

// claim claims the operations of one page as the sweep does and splits
// those claimed into batches as the sweep would hand them on to jobs; it
// returns how many a job holds. An operation neither claimed nor held was
// settled since the page was read. A dry run claims nothing: it leaves out
// the operations a job holds.
func (r *passRun) claim(ctx context.Context, ops []ledger.Operation, size int) ([]LookupBatchArgs, int, error) {
	ids := make([]int64, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
	}
	var claimed map[int64]bool
	if r.DryRun {
		held, err := heldByJobs(ctx, r.Sweep.db, ids)
		if err != nil {
			return nil, 0, err
		}
		claimed = make(map[int64]bool, len(ids))
		for _, id := range ids {
			claimed[id] = !held[id]
		}
		return r.Sweep.batches(ops, claimed, size), len(held), nil
	}
	tx, err := r.Sweep.db.Begin(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("sweep: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if claimed, err = claim(ctx, tx, r.Sweep.scanner.Table(), ids); err != nil {
		return nil, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, 0, fmt.Errorf("sweep: %w", err)
	}
	var unclaimed []int64
	for _, id := range ids {
		if !claimed[id] {
			unclaimed = append(unclaimed, id)
		}
	}
	held := map[int64]bool{}
	if len(unclaimed) > 0 {
		if held, err = heldByJobs(ctx, r.Sweep.db, unclaimed); err != nil {
			r.release(ctx, queuedOps(ops, claimed))
			return nil, 0, err
		}
	}
	for _, op := range ops {
		if !claimed[op.ID] && !held[op.ID] {
			r.tell(PassOutcome{Op: op, Settled: settle.Settled{Op: op}})
		}
	}
	return r.Sweep.batches(ops, claimed, size), len(held), nil
}

// queuedOps are the operations of ops that claimed holds.
func queuedOps(ops []ledger.Operation, claimed map[int64]bool) []QueuedOp {
	var out []QueuedOp
	for _, op := range ops {
		if claimed[op.ID] {
			out = append(out, QueuedOp{ID: op.ID})
		}
	}
	return out
}

// batch runs one batch's operations through the lookup job's runs until
// each is settled or left pending.
func (r *passRun) batch(ctx context.Context, b LookupBatchArgs) {
	w := r.Lookup
	rest := b.Ops
	paced := map[int64]time.Duration{}
	// rows is each operation's row as last read, for the outcome of one
	// left pending.
	rows := map[int64]ledger.Operation{}
	fail := func(err error) {
		for _, q := range rest {
			r.tell(PassOutcome{Op: rowOf(rows, q.ID), Err: err})
		}
		r.release(ctx, rest)
	}
	for len(rest) > 0 {
		if wait := time.Until(firstDueOf(rest)); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				fail(ctx.Err())
				return
			}
		}
		n := w.room(len(rest))
		if err := w.inFlight.Acquire(ctx, n); err != nil {
			fail(err)
			return
		}
		ops, gone, err := w.run(ctx, rest)
		if err != nil {
			w.inFlight.Release(n)
			fail(err)
			return
		}
		for _, q := range ops {
			rows[q.ID] = q.ask.Op
		}
		// An operation paced longer than MaxPaced in all is left pending.
		var left []QueuedOp
		kept := ops[:0]
		for _, q := range ops {
			if next := q.ask.Next; !q.final && !q.changed && next.Kind == settle.ActionPace && next.Step.Err != nil {
				if paced[q.ID] += next.Wait; paced[q.ID] > r.MaxPaced {
					r.tell(PassOutcome{Op: q.ask.Op, Err: fmt.Errorf("%w: %w", ErrLeftPending, next.Step.Err)})
					left = append(left, q.QueuedOp)
					continue
				}
			}
			kept = append(kept, q)
		}
		ops = kept
		settled, failed, err := r.write(ctx, ops, gone)
		w.inFlight.Release(n)
		r.release(ctx, left)
		for id, err := range failed {
			r.tell(PassOutcome{Op: rowOf(rows, id), Err: err})
			r.release(ctx, []QueuedOp{{ID: id}})
		}
		if err != nil {
			rest = nil
			for _, q := range ops {
				rest = append(rest, q.QueuedOp)
			}
			fail(err)
			return
		}
		for _, s := range settled {
			r.tell(PassOutcome{Op: s.Op, Settled: s})
		}
		for _, id := range gone {
			// Confirmed by its workflow, settled or deleted since the scan.
			op := rowOf(rows, id)
			r.tell(PassOutcome{Op: op, Settled: settle.Settled{Op: op}})
		}
		rest, _, _ = carry(ops, nil)
	}
}

// write settles the final operations of ops as the lookup job does, in a
// transaction of their own that releases their claims and those of gone,
// or — a dry run — in the pass's transaction, never committed. A pass has
// no retry of its own, so when the batch's transaction fails, each final
// operation is written in one of its own: one operation's refused write
// is its failure alone, in failed.
func (r *passRun) write(ctx context.Context, ops []*queued, gone []int64) (settled []settle.Settled, failed map[int64]error, err error) {
	if !learned(ops, gone) {
		return nil, nil, nil
	}
	if r.DryRun {
		settled, err := r.dryWrite(ctx, ops)
		return settled, nil, err
	}
	settled, err = r.commit(ctx, ops, gone)
	if err == nil || ctx.Err() != nil {
		return settled, nil, err
	}
	r.release(ctx, idsOf(gone))
	failed = map[int64]error{}
	for _, q := range ops {
		if !q.final {
			continue
		}
		one, err := r.commit(ctx, []*queued{q}, nil)
		if err != nil {
			failed[q.ID] = err
			continue
		}
		settled = append(settled, one...)
	}
	return settled, failed, nil
}

// commit writes what a run of ops learned in one transaction: the
// decisions, the claims of what settled and of gone released; once
// committed, each decision is logged and counted.
func (r *passRun) commit(ctx context.Context, ops []*queued, gone []int64) ([]settle.Settled, error) {
	w := r.Lookup
	tx, err := w.settler.DB.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	settled, err := w.finish(ctx, tx, ops)
	if err != nil {
		return nil, err
	}
	_, _, released := carry(ops, gone)
	if err := hold(ctx, tx, nil, nil, released); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	for _, s := range settled {
		w.settler.LogSettled(s)
	}
	return settled, nil
}

// dryWrite writes the decisions of a dry run's final operations in the
// pass's transaction, which keeps them — so that a record proves one
// operation across the pass — until it is rolled back. Where the database
// refuses the write (a read-only standby, a trigger), the decisions are
// made without it: each the proof rule's on what the database holds, what
// the pass decided before it aside. A dry run writes nothing, so nothing
// fails.
func (r *passRun) dryWrite(ctx context.Context, ops []*queued) ([]settle.Settled, error) {
	r.dryMu.Lock()
	defer r.dryMu.Unlock()
	sp, err := r.dry.Begin(ctx) // a savepoint: a refused write leaves the pass's transaction usable
	if err != nil {
		return nil, err
	}
	settled, err := r.Lookup.finish(ctx, sp, ops)
	if err == nil {
		if err = sp.Commit(ctx); err == nil {
			return settled, nil
		}
	}
	_ = sp.Rollback(context.WithoutCancel(ctx))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var cases []proof.Case
	for _, q := range ops {
		if q.final {
			cases = append(cases, proof.Case{Op: q.ask.Op, Outcome: q.ask.Next.Step.Outcome})
		}
	}
	decisions, err := proof.ProveBatch(ctx, r.Sweep.scanner.Table().Store(r.dry), cases)
	if err != nil {
		return nil, err
	}
	settled = make([]settle.Settled, len(cases))
	for i, c := range cases {
		// As the write would have found it: pending when read.
		settled[i] = settle.Settled{Op: c.Op, Decision: decisions[i], Applied: review.Applied{Settled: true}}
	}
	return settled, nil
}

// idsOf is ids, or nil.
func idsOf(ids []int64) []QueuedOp {
	out := make([]QueuedOp, len(ids))
	for i, id := range ids {
		out[i] = QueuedOp{ID: id}
	}
	return out
}

// release gives back the claims of ops, which the pass leaves pending; a
// dry run holds none. A claim it fails to release is released by the
// next sweep, its job (none) being over.
func (r *passRun) release(ctx context.Context, ops []QueuedOp) {
	if r.DryRun || len(ops) == 0 {
		return
	}
	ids := make([]int64, len(ops))
	for i, q := range ops {
		ids[i] = q.ID
	}
	if err := hold(context.WithoutCancel(ctx), r.Sweep.db, nil, nil, ids); err != nil {
		r.Sweep.logger.Warn("the claims of operations left pending were not released; the next sweep releases them", "error", err)
	}
}

// firstDueOf is when the first of ops may be asked again.
func firstDueOf(ops []QueuedOp) time.Time {
	first := ops[0].NotBefore
	for _, q := range ops[1:] {
		if q.NotBefore.Before(first) {
			first = q.NotBefore
		}
	}
	return first
}

// rowOf is id's row as last read, or one holding only its id.
func rowOf(rows map[int64]ledger.Operation, id int64) ledger.Operation {
	if op, ok := rows[id]; ok {
		return op
	}
	return ledger.Operation{ID: id}
}
