package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

// NotifyWorker delivers the outbox: Slack's rows, and those of every other
// receiver configured, each by its own dispatcher. Rows are leased, so
// replicas' notify jobs share the work without delivering twice.
type NotifyWorker struct {
	river.WorkerDefaults[NotifyArgs]
	dispatcher *notify.Dispatcher
	// others are replaced whole by [NotifyWorker.SetOthers].
	others atomic.Pointer[[]*notify.Dispatcher]
}

// NewNotifyWorker returns the worker delivering through dispatcher
// (Slack's) and others (one per other receiver), side by side: a receiver
// that is slow or down holds back no other's rows.
func NewNotifyWorker(dispatcher *notify.Dispatcher, others ...*notify.Dispatcher) *NotifyWorker {
	w := &NotifyWorker{dispatcher: dispatcher}
	w.SetOthers(others...)
	return w
}

// SetOthers replaces the dispatchers of the other receivers, as a whole,
// from the next pass on: a pass running keeps those it began with, and
// each row it holds is recorded by the dispatcher that holds it. A
// configuration reload that changes a receiver calls it.
func (w *NotifyWorker) SetOthers(others ...*notify.Dispatcher) {
	w.others.Store(&others)
}

// Timeout bounds one pass.
func (w *NotifyWorker) Timeout(*river.Job[NotifyArgs]) time.Duration {
	return notifyDrainTimeout + 30*time.Second
}

// Work implements river.Worker.
func (w *NotifyWorker) Work(ctx context.Context, _ *river.Job[NotifyArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, notifyDrainTimeout)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		others notify.Stats
		errs   []error
	)
	for _, d := range *w.others.Load() {
		wg.Go(func() {
			st, err := d.Drain(ctx)
			mu.Lock()
			defer mu.Unlock()
			others.Add(st)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, err)
			}
		})
	}
	stats, err := w.dispatcher.Drain(ctx)
	wg.Wait()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("deliver Slack alerts: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deliver to the other receivers: %w", err)
	}
	stats.Add(others)
	return river.RecordOutput(ctx, stats)
}
