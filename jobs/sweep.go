package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/sweeper/sweeper/internal/settle"
	"github.com/sweeper/sweeper/ledger"
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

// SweepWorker runs the scan and enqueues one lookup per stale operation.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	scanner *settle.Scanner
	timeout time.Duration
	logger  *slog.Logger
}

// NewSweepWorker returns the worker; timeout bounds a whole scan.
func NewSweepWorker(scanner *settle.Scanner, timeout time.Duration, logger *slog.Logger) *SweepWorker {
	return &SweepWorker{scanner: scanner, timeout: timeout, logger: logger}
}

// insertUnique inserts unique jobs and counts how many were new and how
// many already existed unfinished.
func insertUnique(ctx context.Context, client *river.Client[pgx.Tx], params []river.InsertManyParams) (enqueued, duplicates int, err error) {
	results, err := client.InsertMany(ctx, params)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range results {
		if r.UniqueSkippedAsDuplicate {
			duplicates++
		} else {
			enqueued++
		}
	}
	return enqueued, duplicates, nil
}

// SweepOutput is recorded on each sweep job (visible in River UI).
type SweepOutput struct {
	Scanned    int `json:"scanned"`
	Enqueued   int `json:"enqueued"`
	Duplicates int `json:"duplicates"`
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
	out.Scanned, err = w.scanner.Scan(ctx, func(ctx context.Context, ops []ledger.Operation) error {
		params := make([]river.InsertManyParams, len(ops))
		for i, op := range ops {
			params[i] = river.InsertManyParams{Args: LookupArgs{OperationID: op.ID}}
		}
		enqueued, duplicates, err := insertUnique(ctx, client, params)
		out.Enqueued += enqueued
		out.Duplicates += duplicates
		if err != nil {
			return fmt.Errorf("sweep: enqueue lookups: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.logger.Info("sweep done", "scanned", out.Scanned, "enqueued", out.Enqueued, "already_queued", out.Duplicates)
	return river.RecordOutput(ctx, out)
}
