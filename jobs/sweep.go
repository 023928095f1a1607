package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
)

// SweepArgs asks for one pass of the stale scan.
type SweepArgs struct {
	// NextFire, for a scheduled run, is the end of the schedule's period
	// it serves: the next fire time after it. It makes each period's run
	// unique; zero for a run asked for by hand.
	NextFire time.Time `json:"next_fire,omitzero"`
}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "sweep" }

func (SweepArgs) forRun(nextFire time.Time) river.JobArgs { return SweepArgs{NextFire: nextFire} }

// SweepWorker runs the scan and hands the stale operations on to lookup
// jobs, each holding up to [LookupBatchSize] operations of one provider.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	scanner *settle.Scanner
	db      review.TxBeginner
	timeout time.Duration
	logger  *slog.Logger
}

// NewSweepWorker returns the worker; db takes the transaction that claims
// each page's operations and inserts their jobs; timeout bounds a whole
// scan.
func NewSweepWorker(scanner *settle.Scanner, db review.TxBeginner, timeout time.Duration, logger *slog.Logger) *SweepWorker {
	return &SweepWorker{scanner: scanner, db: db, timeout: timeout, logger: logger}
}

// SweepOutput is recorded on each sweep job (visible in River UI).
type SweepOutput struct {
	Scanned int `json:"scanned"`
	// Enqueued counts the operations handed on to lookup jobs, Jobs the
	// jobs holding them, and Duplicates the operations a job already held.
	Enqueued   int `json:"enqueued"`
	Jobs       int `json:"jobs"`
	Duplicates int `json:"duplicates"`
	// Released counts the claims of jobs that had ended without releasing
	// them (discarded, cancelled, deleted): their operations are handed on
	// again.
	Released int64 `json:"released"`
}

// Timeout bounds a whole scan (sweep.timeout). A sweep cut short is
// harmless: the next one starts over, and lookups already enqueued stay.
func (w *SweepWorker) Timeout(*river.Job[SweepArgs]) time.Duration { return w.timeout }

// Work implements river.Worker.
func (w *SweepWorker) Work(ctx context.Context, job *river.Job[SweepArgs]) error {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return river.JobCancel(err)
	}
	var out SweepOutput
	if out.Released, err = releaseLost(ctx, w.db); err != nil {
		return err
	}
	batch := w.batchSize()
	out.Scanned, err = w.scanner.Scan(ctx, func(ctx context.Context, ops []ledger.Operation) error {
		jobs, enqueued, err := w.handOn(ctx, client, ops, batch)
		out.Jobs += jobs
		out.Enqueued += enqueued
		out.Duplicates += len(ops) - enqueued
		return err
	})
	if err != nil {
		return err
	}
	w.logger.Log(ctx, sweepDoneLevel(out), "sweep done", "scanned", out.Scanned, "enqueued", out.Enqueued, "jobs", out.Jobs,
		"already_queued", out.Duplicates, "claims_released", out.Released)
	return river.RecordOutput(ctx, out)
}

// batchFor is how many operations of provider one job holds: at most
// limit, and no more than the provider's rate limit lets one run ask
// within lookup_timeout — the rest would only be paced and carried.
func (w *SweepWorker) batchFor(provider string, limit int) int {
	p := w.scanner.Providers[provider]
	if p == nil {
		return limit
	}
	// Each request answers up to the provider's batch size.
	if n := p.RateLimit() * p.Limits().LookupTimeout.Seconds() * float64(max(1, p.MaxBatch())); n < float64(limit) {
		return max(1, int(n))
	}
	return limit
}

// handOn claims the operations of one page that no job holds and inserts
// the lookup jobs holding them, batch operations of one provider a job, in
// one transaction: a second sweep, here or on another replica, finds them
// claimed and adds nothing. It returns how many jobs and operations it
// added.
func (w *SweepWorker) handOn(ctx context.Context, client *river.Client[pgx.Tx], ops []ledger.Operation, batch int) (jobs, enqueued int, err error) {
	tx, err := w.db.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	ids := make([]int64, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
	}
	claimed, err := claim(ctx, tx, w.scanner.Table(), ids)
	if err != nil || len(claimed) == 0 {
		return 0, 0, err
	}
	var params []river.InsertManyParams
	for _, args := range w.batches(ops, claimed, batch) {
		params = append(params, river.InsertManyParams{Args: args})
	}
	results, err := client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep: enqueue lookups: %w", err)
	}
	var heldOps, heldBy []int64
	for i, r := range results {
		for _, q := range params[i].Args.(LookupBatchArgs).Ops {
			heldOps, heldBy = append(heldOps, q.ID), append(heldBy, r.Job.ID)
		}
	}
	if err := hold(ctx, tx, heldOps, heldBy, nil); err != nil {
		return 0, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("sweep: %w", err)
	}
	return len(params), len(heldOps), nil
}

// batches splits the operations of one page that were claimed into lookup
// jobs' args: by provider, in the page's order, at most batch operations
// of one provider each ([SweepWorker.batchFor]). A page of the
// unconfigured or future-dated scans mixes providers.
func (w *SweepWorker) batches(ops []ledger.Operation, claimed map[int64]bool, batch int) []LookupBatchArgs {
	byProvider := map[string][]QueuedOp{}
	var order []string
	for _, op := range ops {
		if !claimed[op.ID] {
			continue
		}
		if _, ok := byProvider[op.Provider]; !ok {
			order = append(order, op.Provider)
		}
		byProvider[op.Provider] = append(byProvider[op.Provider], QueuedOp{ID: op.ID})
	}
	var out []LookupBatchArgs
	for _, provider := range order {
		for chunk := range slices.Chunk(byProvider[provider], w.batchFor(provider, batch)) {
			out = append(out, LookupBatchArgs{Provider: provider, Ops: chunk})
		}
	}
	return out
}

// batchSize is how many operations one lookup job holds at most: the
// sweep's page, up to [LookupBatchSize].
func (w *SweepWorker) batchSize() int { return min(LookupBatchSize, max(1, w.scanner.BatchSize)) }

// sweepDoneLevel is the level of a sweep's "sweep done" line: INFO when the
// sweep found or released something, DEBUG when it found nothing, so that
// an idle daemon's log is not one line per sweep interval.
func sweepDoneLevel(out SweepOutput) slog.Level {
	if out.Scanned > 0 || out.Enqueued > 0 || out.Released > 0 {
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
