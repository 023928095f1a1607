package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
)

// EscalateArgs asks for one pass of the escalation scan.
type EscalateArgs struct {
	// NextFire, for a scheduled run, is the end of the schedule's period
	// it serves: the next fire time after it. It makes each period's run
	// unique; zero for a run asked for by hand.
	NextFire time.Time `json:"next_fire,omitzero"`
}

// Kind implements river.JobArgs.
func (EscalateArgs) Kind() string { return "escalate" }

func (EscalateArgs) forRun(nextFire time.Time) river.JobArgs { return EscalateArgs{NextFire: nextFire} }

// EscalateTicketArgs asks for one expired ticket to be looked up once more
// and escalated or resolved. Version is the ticket's version when the scan
// saw it: a ticket that changed since is left alone.
type EscalateTicketArgs struct {
	TicketID int64 `json:"ticket_id" river:"unique"`
	Version  int   `json:"version" river:"unique"`
}

// Kind implements river.JobArgs.
func (EscalateTicketArgs) Kind() string { return "escalate_ticket" }

// InsertOpts makes the job unique by (ticket, version) while unfinished:
// [ticketJobOpts].
func (EscalateTicketArgs) InsertOpts() river.InsertOpts { return ticketJobOpts }

// ticketJobOpts are a ticket job's (escalate_ticket, relookup_ticket):
// unique by its arguments while unfinished, on the lookup queue — it makes
// one lookup, bounded by river.max_workers like every other — and ten
// attempts.
var ticketJobOpts = river.InsertOpts{
	Queue:       QueueLookup,
	MaxAttempts: 10,
	UniqueOpts:  uniqueWhileUnfinished,
}

// EscalateWorker runs the escalation scan and enqueues one escalate_ticket
// job per expired ticket, and one relookup_ticket job per ticket whose
// scheduled re-lookup is due.
type EscalateWorker struct {
	river.WorkerDefaults[EscalateArgs]
	escalator *settle.Escalator
	scan      Scan
	logger    *slog.Logger
}

// Scan bounds a periodic scan: sweep.timeout, sweep.batch_size and
// sweep.query_timeout.
type Scan struct {
	// Timeout bounds a whole scan.
	Timeout time.Duration
	// BatchSize is how many rows one page reads.
	BatchSize int
	// QueryTimeout bounds each page's query.
	QueryTimeout time.Duration
}

// NewEscalateWorker returns the worker; scan bounds each pass.
func NewEscalateWorker(e *settle.Escalator, scan Scan, logger *slog.Logger) *EscalateWorker {
	return &EscalateWorker{escalator: e, scan: scan, logger: logger}
}

// EscalateOutput is recorded on each escalate job.
type EscalateOutput struct {
	Expired int `json:"expired"`
	// DueRelookups counts the open tickets whose scheduled re-lookup was due.
	DueRelookups int `json:"due_relookups"`
	Enqueued     int `json:"enqueued"`
	Duplicates   int `json:"duplicates"`
}

// Timeout bounds a whole scan (sweep.timeout); a scan cut short is
// harmless, the next one starts over.
func (w *EscalateWorker) Timeout(*river.Job[EscalateArgs]) time.Duration {
	return w.scan.Timeout
}

// Work implements river.Worker.
func (w *EscalateWorker) Work(ctx context.Context, job *river.Job[EscalateArgs]) error {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return river.JobCancel(err)
	}
	e := w.escalator
	var out EscalateOutput
	out.Expired, err = e.ScanExpired(ctx, e.Now(), w.scan.BatchSize, w.scan.QueryTimeout,
		enqueueEach(client, &out, "escalate", func(t review.ExpiredTicket) river.JobArgs {
			return EscalateTicketArgs{TicketID: t.ID, Version: t.Version}
		}))
	if err != nil {
		return err
	}
	out.DueRelookups, err = e.ScanDueRelookups(ctx, e.Now(), w.scan.BatchSize, w.scan.QueryTimeout,
		enqueueEach(client, &out, "relookup", func(d review.DueRelookup) river.JobArgs {
			return RelookupTicketArgs{TicketID: d.ID, Relookups: d.Relookups}
		}))
	if err != nil {
		return err
	}
	if out.Expired > 0 || out.DueRelookups > 0 {
		w.logger.Info("escalation scan done", "expired", out.Expired, "due_relookups", out.DueRelookups,
			"enqueued", out.Enqueued, "already_queued", out.Duplicates)
	}
	return river.RecordOutput(ctx, out)
}

// enqueueEach is a scan's page handler that inserts one unique ticket job
// per ticket of the page, its arguments made by args, and counts in out
// how many were new and how many already existed unfinished. op names the
// scan in an error.
func enqueueEach[T any](client *river.Client[pgx.Tx], out *EscalateOutput, op string, args func(T) river.JobArgs) func(context.Context, []T) error {
	return func(ctx context.Context, tickets []T) error {
		params := make([]river.InsertManyParams, len(tickets))
		for i, t := range tickets {
			params[i] = river.InsertManyParams{Args: args(t)}
		}
		results, err := client.InsertMany(ctx, params)
		if err != nil {
			return fmt.Errorf("%s: enqueue tickets: %w", op, err)
		}
		for _, r := range results {
			if r.UniqueSkippedAsDuplicate {
				out.Duplicates++
			} else {
				out.Enqueued++
			}
		}
		return nil
	}
}

// EscalateTicketWorker takes one escalation step per job, completing the
// job in the transaction that writes the step.
type EscalateTicketWorker struct {
	river.WorkerDefaults[EscalateTicketArgs]
	escalator *settle.Escalator
	timeout   time.Duration
}

// NewEscalateTicketWorker returns the worker; timeout bounds one run (the
// lookup included).
func NewEscalateTicketWorker(e *settle.Escalator, timeout time.Duration) *EscalateTicketWorker {
	return &EscalateTicketWorker{escalator: e, timeout: timeout}
}

// Timeout implements river.Worker.
func (w *EscalateTicketWorker) Timeout(*river.Job[EscalateTicketArgs]) time.Duration {
	return w.timeout
}

// Work implements river.Worker.
func (w *EscalateTicketWorker) Work(ctx context.Context, job *river.Job[EscalateTicketArgs]) error {
	_, err := w.escalator.Escalate(ctx, job.Args.TicketID, job.Args.Version, completing(job))
	return cancelGone(err)
}

// completing completes job inside the transaction that writes its outcome,
// so that the job is done exactly when its outcome is.
func completing[T river.JobArgs](job *river.Job[T]) review.InTx {
	return func(ctx context.Context, tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	}
}

// cancelGone ends, rather than retries, a ticket job whose ticket does not
// exist.
func cancelGone(err error) error {
	if errors.Is(err, review.ErrTicketNotFound) {
		return river.JobCancel(err)
	}
	return err
}
