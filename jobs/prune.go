package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
)

// pruneTimeout bounds one prune pass; what is left waits for the next.
const pruneTimeout = 5 * time.Minute

// PruneArgs asks for one pass deleting what retention no longer keeps.
type PruneArgs struct {
	// NextFire, for a scheduled run, is the end of the schedule's period
	// it serves; zero for a run asked for by hand.
	NextFire time.Time `json:"next_fire,omitzero"`
}

// Kind implements river.JobArgs.
func (PruneArgs) Kind() string { return "prune" }

func (PruneArgs) forRun(nextFire time.Time) river.JobArgs { return PruneArgs{NextFire: nextFire} }

// Pruner deletes what retention no longer keeps, and returns how many rows
// it deleted. It is idempotent: a second pass deletes what became due since.
type Pruner interface {
	Prune(ctx context.Context) (int64, error)
}

// PruneWorker runs the prune pass. River runs periodic jobs from the
// leader only; a pass run twice deletes nothing twice.
type PruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	pruner Pruner
}

// NewPruneWorker returns the worker pruning with pruner.
func NewPruneWorker(pruner Pruner) *PruneWorker { return &PruneWorker{pruner: pruner} }

// Timeout bounds one pass.
func (w *PruneWorker) Timeout(*river.Job[PruneArgs]) time.Duration { return pruneTimeout }

// Work implements river.Worker.
func (w *PruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	n, err := w.pruner.Prune(ctx)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	return river.RecordOutput(ctx, struct {
		OutboxRows int64 `json:"outbox_rows"`
	}{n})
}
