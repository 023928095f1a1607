package app

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/settle"
)

// PassCounts counts what one pass did (a ticket's summary is review.Summary).
type PassCounts struct {
	Scanned int `json:"scanned"`
	Done    int `json:"done"`
	// Tickets counts the tickets opened, by reason.
	Tickets map[proof.Reason]int `json:"tickets"`
	// AlreadySettled counts operations someone else settled or confirmed
	// while the pass looked them up.
	AlreadySettled int `json:"already_settled"`
	// Errors counts operations the pass could not settle (database errors);
	// they stay pending for the next sweep.
	Errors int `json:"errors"`
	// LeftPending counts operations the pass left pending without asking
	// long: their provider is down for the cluster, or its search may still
	// lag (settle_window). The daemon, or a later pass, settles them.
	LeftPending int `json:"left_pending"`
	// MovedAfterMaxOutage counts the operations moved to review, as
	// lookup_failed tickets (counted in Tickets too), because their
	// provider was down longer than its max_outage.
	MovedAfterMaxOutage int `json:"moved_after_max_outage,omitempty"`
	// HeldByDaemon counts stale operations the pass left to the lookup job
	// of a running daemon that holds them (sweeper.lookup_claims).
	HeldByDaemon int  `json:"held_by_daemon"`
	DryRun       bool `json:"dry_run"`
	// Decisions lists each decision, for a dry run or with
	// OnceOptions.Decisions.
	Decisions []DecisionLine `json:"decisions,omitempty"`
}

// DecisionLine is one decision of a dry run.
type DecisionLine struct {
	OpKey    string         `json:"op_key"`
	Provider string         `json:"provider"`
	Decision proof.Decision `json:"decision"`
}

// OnceOptions tune [App.SweepOnce].
type OnceOptions struct {
	// DryRun looks up and decides, and writes nothing: its decisions are
	// written in one transaction that is rolled back.
	DryRun bool
	// Decisions lists each decision a real pass applied in
	// PassCounts.Decisions, as a dry run always does (sweep --once -v).
	Decisions bool
	// Concurrency is how many lookup batches run at once, as many lookup
	// jobs would; default river.max_workers.
	Concurrency int
	// MaxPaced is how long, in all, the pass waits for one operation's
	// provider to be asked — down for the cluster, or a settle window still
	// open — before it leaves the operation pending; default 30s.
	MaxPaced time.Duration
}

// defaultMaxPaced is how long a pass in the foreground waits, in all, for
// one operation's provider to be asked.
const defaultMaxPaced = 30 * time.Second

// SweepOnce runs one full pass in this process: the sweep and every
// lookup it hands on, through the steps the River workers take
// ([jobs.Pass]: the scan, the lookup claims, the batches, each batch's
// asks within its provider's budget, the decisions written as a lookup job
// writes them), without River; it returns when all are settled. It leaves
// alone the operations a running daemon's lookup job holds, claims the
// others as the sweep does, and writes exactly what the River jobs write,
// through the same compare-and-set, so it is safe beside a daemon: an
// operation a daemon claims while the pass runs may be asked twice —
// lookups only read — and whichever settles it first wins, the other
// finds nothing to do. A dry run writes its decisions in one transaction
// that it rolls back.
func (s *App) SweepOnce(ctx context.Context, opts OnceOptions) (sum PassCounts, err error) {
	ctx, end := s.pass(ctx, SpanSweepOnce)
	defer func() {
		end(err, attribute.Bool("sweeper.dry_run", opts.DryRun), attribute.Int("sweeper.sweep.scanned", sum.Scanned),
			attribute.Int("sweeper.sweep.done", sum.Done), attribute.Int("sweeper.sweep.errors", sum.Errors))
	}()
	concurrency := opts.Concurrency
	if concurrency <= 0 {
		concurrency = s.Config.River.MaxWorkers
	}
	sum = PassCounts{Tickets: map[proof.Reason]int{}, DryRun: opts.DryRun}
	if opts.DryRun {
		// A dry run writes nothing — not even a provider's health, which
		// would pause (or resume) the lookups of every replica.
		for _, p := range s.Providers {
			p.SetHealth(nil)
			p.SetSharedRate(nil) // its own limit paces it
		}
	} else {
		// A provider down longer than its max_outage is not waited for:
		// its waiting operations move to review first.
		outages, err := s.Outages().End(ctx)
		for _, o := range outages {
			sum.Tickets[proof.ReasonLookupFailed] += o.Moved
			sum.MovedAfterMaxOutage += o.Moved
		}
		if err != nil {
			s.Logger.Error("max_outage: the waiting operations of a provider down too long were not all moved to review", "error", err)
			sum.Errors++
		}
	}
	pass := &jobs.Pass{
		Sweep:       jobs.NewSweepWorker(s.Scanner(), s.Pool, s.Config.Sweep.Timeout.Duration, s.Logger),
		Lookup:      jobs.NewLookupBatchWorker(s.Settler()),
		DryRun:      opts.DryRun,
		Concurrency: concurrency,
		MaxPaced:    cmp.Or(opts.MaxPaced, defaultMaxPaced),
	}
	res, err := pass.Run(ctx, func(o jobs.PassOutcome) {
		op, settled := o.Op, o.Settled
		switch {
		case errors.Is(o.Err, jobs.ErrLeftPending):
			sum.LeftPending++
			s.Logger.Info("left pending for a later pass", "op_key", settle.LogKey(op), "why", o.Err)
		case o.Err != nil:
			sum.Errors++
			s.Logger.Error("settle failed; the operation stays pending", "op_key", settle.LogKey(op), "error", o.Err)
		case !settled.Applied.Settled:
			sum.AlreadySettled++
		default:
			if opts.DryRun || opts.Decisions {
				sum.Decisions = append(sum.Decisions, DecisionLine{OpKey: op.OpKey, Provider: op.Provider, Decision: settled.Decision})
			}
			countDecision(&sum, settled.Decision)
		}
	})
	sum.Scanned, sum.HeldByDaemon = res.Scanned, res.Held
	return sum, err
}

// scanFunc walks rows in pages and hands each page to page; it returns how
// many rows it saw.
type scanFunc[T any] func(ctx context.Context, page func(context.Context, []T) error) (int, error)

// inPool hands every item scan finds to handle, on workers goroutines, and
// returns what scan returns once every item is handled.
func inPool[T any](ctx context.Context, workers int, scan scanFunc[T], handle func(T)) (int, error) {
	work := make(chan T)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for item := range work {
				handle(item)
			}
		})
	}
	n, err := scan(ctx, func(ctx context.Context, items []T) error {
		for _, item := range items {
			select {
			case work <- item:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	close(work)
	wg.Wait()
	return n, err
}

func countDecision(sum *PassCounts, d proof.Decision) {
	if d.Done {
		sum.Done++
	} else {
		sum.Tickets[d.Reason]++
	}
}
