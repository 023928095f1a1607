package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/sweeper/sweeper/notify"
)

// notifyDrainTimeout bounds one notify job's delivery of the outbox.
const notifyDrainTimeout = time.Minute

// NotifyArgs asks for one delivery pass of the outbox.
type NotifyArgs struct {
	// NextFire, for a scheduled run, is the end of the schedule's period
	// it serves: the next fire time after it. It makes each period's run
	// unique; zero for a run asked for by hand.
	NextFire time.Time `json:"next_fire,omitzero"`
}

// Kind implements river.JobArgs.
func (NotifyArgs) Kind() string { return "notify" }

func (NotifyArgs) forRun(nextFire time.Time) river.JobArgs { return NotifyArgs{NextFire: nextFire} }

// QueueNotify is the queue outbox deliveries run on. A pass drains the
// outbox for up to a minute, and one is enqueued every schedules.notify
// period: on the default queue, a Slack backlog would take every slot the
// sweep and the escalation scan need, and they would wait for as long as
// the backlog lasts.
const QueueNotify = "notify"

// InsertOpts puts delivery passes on their own queue.
func (NotifyArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueNotify} }

// NotifyWorker delivers the outbox to Slack. Rows are leased, so replicas'
// notify jobs share the work without posting twice.
type NotifyWorker struct {
	river.WorkerDefaults[NotifyArgs]
	dispatcher *notify.Dispatcher
}

// NewNotifyWorker returns the worker delivering through dispatcher.
func NewNotifyWorker(dispatcher *notify.Dispatcher) *NotifyWorker {
	return &NotifyWorker{dispatcher: dispatcher}
}

// Timeout bounds one pass.
func (w *NotifyWorker) Timeout(*river.Job[NotifyArgs]) time.Duration {
	return notifyDrainTimeout + 30*time.Second
}

// Work implements river.Worker.
func (w *NotifyWorker) Work(ctx context.Context, _ *river.Job[NotifyArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, notifyDrainTimeout)
	defer cancel()
	stats, err := w.dispatcher.Drain(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("deliver Slack alerts: %w", err)
	}
	return river.RecordOutput(ctx, stats)
}
