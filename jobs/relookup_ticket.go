package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/sweeper/sweeper/settle"
)

// RelookupTicketArgs asks for one open not_found or lookup_failed ticket
// to be looked up again on its schedule. Relookups is the count the scan
// saw: a ticket looked up again since is left alone.
type RelookupTicketArgs struct {
	TicketID  int64 `json:"ticket_id" river:"unique"`
	Relookups int   `json:"relookups" river:"unique"`
}

// Kind implements river.JobArgs.
func (RelookupTicketArgs) Kind() string { return "relookup_ticket" }

// InsertOpts makes the job unique by (ticket, count) while unfinished:
// [ticketJobOpts].
func (RelookupTicketArgs) InsertOpts() river.InsertOpts { return ticketJobOpts }

// RelookupTicketWorker makes one scheduled re-lookup per job, completing
// the job in the transaction that writes its outcome.
type RelookupTicketWorker struct {
	river.WorkerDefaults[RelookupTicketArgs]
	escalator *settle.Escalator
	timeout   time.Duration
}

// NewRelookupTicketWorker returns the worker; timeout bounds one run.
func NewRelookupTicketWorker(e *settle.Escalator, timeout time.Duration) *RelookupTicketWorker {
	return &RelookupTicketWorker{escalator: e, timeout: timeout}
}

// Timeout implements river.Worker.
func (w *RelookupTicketWorker) Timeout(*river.Job[RelookupTicketArgs]) time.Duration {
	return w.timeout
}

// Work implements river.Worker.
func (w *RelookupTicketWorker) Work(ctx context.Context, job *river.Job[RelookupTicketArgs]) error {
	_, err := w.escalator.Relookup(ctx, job.Args.TicketID, job.Args.Relookups, completing(job))
	return cancelGone(err)
}
