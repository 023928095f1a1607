package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/robfig/cron/v3"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/health"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// Sweeper is sweeper's work, wired: the configuration, the database, the
// providers, and the pieces the jobs and the CLI share.
type Sweeper struct {
	Config    *config.Config
	Pool      *pgxpool.Pool
	Providers map[string]*providers.Provider
	Logger    *slog.Logger
	// Now is the clock, when a test sets it.
	Now func() time.Time
	// Clock is the database's clock, by which every time-based decision is
	// taken when Now is not set (replicas with skewed clocks decide alike);
	// nil: this machine's.
	Clock *ledger.Clock
	// Getenv reads secrets (SLACK_BOT_TOKEN); nil reads none.
	Getenv func(string) string
	// Metrics counts the events of the work wired from here (scans,
	// settlements, escalations, Slack); nil counts none. Lookups are
	// counted by each provider ([providers.Provider.SetMetrics]).
	Metrics *metrics.Metrics
}

// BuildProviders builds every configured provider's adapter, behind its
// rate limit and concurrency cap, from the explicit list of kinds. Errors
// name the block and are gathered, not stopped at.
func BuildProviders(cfg *config.Config, kinds []providers.Kind, getenv func(string) string, logger *slog.Logger) (map[string]*providers.Provider, error) {
	out := map[string]*providers.Provider{}
	var errs []error
	names := make([]string, 0, len(cfg.Providers))
	for name := range cfg.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		block := cfg.Providers[name]
		var kind *providers.Kind
		for i := range kinds {
			if kinds[i].Name == block.Kind {
				kind = &kinds[i]
			}
		}
		if kind == nil {
			errs = append(errs, fmt.Errorf("providers.%s.kind: unknown kind %q", name, block.Kind))
			continue
		}
		adapter, err := kind.New(name, block.Settings, providers.Env{
			Getenv: getenv,
			Logger: logger.With("provider", name),
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("providers.%s: %w", name, err))
			continue
		}
		out[name] = providers.NewProvider(name, block.Kind, adapter, providers.Limits{
			StaleAfter:    block.StaleAfter.Duration,
			LookupTimeout: block.LookupTimeout.Duration,
			LookupBudget:  block.LookupBudget.Duration,
			RateLimit:     block.RateLimit,
			Concurrency:   block.Concurrency,
			OutageAfter:   block.OutageAfter,
			SettleWindow:  block.SettleWindow.Duration,
		})
	}
	return out, errors.Join(errs...)
}

// TrackHealth gives every provider its health tracker over s's pool, so
// that a provider failing again and again is down for the whole cluster
// (internal/health): its lookups pause, one probe asks at a time, and when
// it answers, its open lookup_failed tickets are looked up again at once.
func (s *Sweeper) TrackHealth() {
	for name, p := range s.Providers {
		if p.OutageAfter <= 0 {
			continue // each operation's lookups spend their own budget
		}
		tracker := health.NewTracker(s.Pool, name, p.OutageAfter, 2*p.LookupTimeout+lookupOverhead)
		tracker.OnUp = func(ctx context.Context) {
			n, err := s.Reviews().RelookupNow(ctx, name)
			s.Logger.Info("provider answers again; lookups resume", "provider", name, "tickets_relooked_now", n, "error", err)
		}
		p.SetHealth(tracker)
	}
}

// Policy is the review policy the configuration describes.
func Policy(cfg *config.Config) review.Policy {
	return review.Policy{
		DefaultOwner:   cfg.Review.DefaultOwner,
		WorkflowOwners: cfg.Review.Owners.Workflows,
		ProviderOwners: cfg.Review.Owners.Providers,
		Window:         cfg.Review.Window.Duration,
		Priority:       cfg.Review.Priority,
		RelookupAfter:  cfg.Review.RelookupAfter.Duration,
		RelookupMax:    cfg.Review.RelookupMax.Duration,
	}
}

func (s *Sweeper) now() time.Time {
	switch {
	case s.Now != nil:
		return s.Now()
	case s.Clock != nil:
		return s.Clock.Now()
	}
	return time.Now()
}

// Settler returns the settler the lookup worker and `sweep --once` use,
// writing through applier (nil: a transaction per decision).
func (s *Sweeper) Settler(applier Applier) *Settler {
	if applier == nil {
		applier = s.Reviews()
	}
	return &Settler{Providers: s.Providers, Reviews: applier, DB: s.Pool, Logger: s.Logger, Now: s.now, Metrics: s.Metrics}
}

// Reviews returns the ticket store under the configured policy.
func (s *Sweeper) Reviews() *review.Store { return review.NewStore(s.Pool, Policy(s.Config)) }

// Scanner returns the stale scan.
func (s *Sweeper) Scanner() *Scanner {
	return &Scanner{
		DB:           s.Pool,
		Providers:    s.Providers,
		BatchSize:    s.Config.Sweep.BatchSize,
		QueryTimeout: s.Config.Sweep.QueryTimeout.Duration,
		Now:          s.now,
		Metrics:      s.Metrics,
	}
}

// ClientOptions tune a River client beyond the configuration, for tests
// and the demo.
type ClientOptions struct {
	// FetchPollInterval overrides River's poll interval (default 1s).
	FetchPollInterval time.Duration
	// NoPeriodic leaves the periodic jobs, sweep and escalate, out (tests
	// insert them).
	NoPeriodic bool
	// CommitBatch caps how many lookup outcomes share one commit; 1 gives
	// each its own transaction. Default 100.
	CommitBatch int
}

// Daemon is a River client running sweeper's jobs, and the batcher its
// lookups write through.
type Daemon struct {
	// Client is the River client, for inserting jobs.
	Client  *river.Client[pgx.Tx]
	batcher *review.Batcher
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start starts the batcher and the client. ctx bounds neither: stop them
// with Stop or StopAndCancel.
func (d *Daemon) Start(ctx context.Context) error {
	batchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.cancel, d.done = cancel, make(chan struct{})
	go func() {
		defer close(d.done)
		d.batcher.Run(batchCtx)
	}()
	if err := d.Client.Start(context.WithoutCancel(ctx)); err != nil {
		d.stopBatcher()
		return err
	}
	return nil
}

// Stop stops fetching jobs and waits, within ctx, for running jobs to
// finish and their outcomes to commit.
func (d *Daemon) Stop(ctx context.Context) error {
	err := d.Client.Stop(ctx)
	if err == nil {
		d.stopBatcher()
	}
	return err
}

// StopAndCancel cancels running jobs (they are retried by the next process)
// and waits for them to return.
func (d *Daemon) StopAndCancel(ctx context.Context) error {
	err := d.Client.StopAndCancel(ctx)
	d.stopBatcher()
	return err
}

func (d *Daemon) stopBatcher() {
	if d.cancel != nil {
		d.cancel()
		<-d.done
		d.cancel = nil
	}
}

// NewDaemon returns a River client running sweeper's workers and periodic
// jobs in schema sweeper. Every replica registers the same periodic jobs;
// River's leader alone enqueues them, and each sweep and escalation scan is
// unique per period of its schedule, so a restart or a leader change does
// not double it.
func (s *Sweeper) NewDaemon(opts ClientOptions) (*Daemon, error) {
	batcher := review.NewBatcher(s.Reviews(), cmp.Or(opts.CommitBatch, 100))
	workers := river.NewWorkers()
	// Jobs an older version queued, one operation each, still run.
	lookup := NewLookupWorker(s.Settler(batcher), s.Pool)
	river.AddWorker(workers, lookup)
	river.AddWorker(workers, NewLookupBatchWorker(s.Settler(nil), s.Pool, Policy(s.Config)))
	sweepTimeout := s.Config.Sweep.Timeout.Duration
	// The River sweep hands each provider's backlog on in bounded pieces:
	// the queue, and memory, stay the same with a million stale rows.
	scanner := s.Scanner()
	scanner.Admission = AdmissionHorizon
	river.AddWorker(workers, NewSweepWorker(scanner, s.Pool, sweepTimeout, s.Logger))
	river.AddWorker(workers, NewEscalateWorker(s))
	river.AddWorker(workers, NewEscalateTicketWorker(s.Escalator(), lookup.Timeout(nil)))
	river.AddWorker(workers, NewRelookupTicketWorker(s.Escalator(), lookup.Timeout(nil)))
	dispatcher, err := s.Dispatcher()
	switch {
	case errors.Is(err, ErrSlackOff):
		dispatcher = nil
	case err != nil:
		return nil, err
	default:
		river.AddWorker(workers, &NotifyWorker{dispatcher: dispatcher})
	}

	var periodic []*river.PeriodicJob
	if !opts.NoPeriodic {
		jobs := []struct {
			id, key, expr string
			args          periodicArgs
		}{
			{"sweep", "schedules.sweep", s.Config.Schedules.Sweep, SweepArgs{}},
			{"escalate", "schedules.escalate", s.Config.Schedules.Escalate, EscalateArgs{}},
		}
		if dispatcher != nil {
			jobs = append(jobs, struct {
				id, key, expr string
				args          periodicArgs
			}{"notify", "schedules.notify", s.Config.Schedules.Notify, NotifyArgs{}})
		}
		for _, j := range jobs {
			schedule, err := cron.ParseStandard(j.expr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", j.key, err)
			}
			args := j.args
			periodic = append(periodic, river.NewPeriodicJob(schedule, func() (river.JobArgs, *river.InsertOpts) {
				return periodicRun(args, schedule, s.fireClock())
			}, &river.PeriodicJobOpts{ID: j.id, RunOnStart: true}))
		}
	}

	// A job that outlives its timeout is cancelled, so a job still marked
	// running past its timeout belongs to a process that died (kill -9, a
	// lost machine): River rescues it, and it runs again. River's rescuer
	// considers jobs running longer than RescueStuckJobsAfter and leaves
	// alone each whose own Timeout has not yet passed, so that is set from
	// the lookups' limit — a dead replica's lookups resume about a minute
	// later — while the longer sweep and delivery passes wait for their
	// own. Were a live job rescued after all, running it twice is harmless:
	// lookups only read, and every write is a compare-and-set. (Every
	// worker sets its own Timeout; River wants its default, JobTimeout, no
	// longer than RescueStuckJobsAfter.)
	jobTimeout := lookup.Timeout(nil)
	rescueAfter := jobTimeout + 30*time.Second
	queues := map[string]river.QueueConfig{
		river.QueueDefault: {MaxWorkers: 4},
		QueueLookup:        {MaxWorkers: s.Config.River.MaxWorkers},
	}
	if dispatcher != nil {
		queues[QueueNotify] = river.QueueConfig{MaxWorkers: 4}
	}
	client, err := river.NewClient(riverpgxv5.New(s.Pool), &river.Config{
		Schema:               migrations.Schema,
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         periodic,
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: rescueAfter,
		FetchCooldown:        FetchCooldown,
		FetchPollInterval:    opts.FetchPollInterval,
		Logger:               riverLogger(s.Logger),
	})
	if err != nil {
		return nil, err
	}
	return &Daemon{Client: client, batcher: batcher}, nil
}

// FetchCooldown is the River client's pause between fetches. River fetches
// at most a queue's free slots per fetch, so its default of 100 ms caps a
// process at max_workers×10 lookups a second however fast the provider
// answers; 10 ms moves that cap past what the database settles and keeps a
// 50 ms lookup from waiting on the fetch loop. An idle queue is still
// polled only every FetchPollInterval.
const FetchCooldown = 10 * time.Millisecond

// periodicArgs are the args of a periodic job: forRun names one run.
type periodicArgs interface {
	river.JobArgs
	// forRun returns the args of the run whose period ends at nextFire.
	forRun(nextFire time.Time) river.JobArgs
}

// fireSlack is how early River may enqueue a periodic run (it fires what
// is due within 100 ms), rounded up to the second cron works in.
const fireSlack = time.Second

// periodicRun returns the args and insert options of the run of a periodic
// job on schedule that River enqueues at now: at one of the schedule's fire
// times, or at start. A run is unique by the end of its period, the
// schedule's next fire time after now, read in the schedule's own time
// zone (CRON_TZ): every fire is a run of its own whatever daylight saving
// does, and a run on start shares its key with the fire before it, so a
// restart or a new leader does not add one. (River's unique-by-period
// windows are UTC: with CRON_TZ, the run after a daylight saving change
// could fall in the previous run's window and be skipped.) An "@every"
// schedule keeps windows of its interval: it has no time zone.
func periodicRun(args periodicArgs, schedule cron.Schedule, now time.Time) (river.JobArgs, *river.InsertOpts) {
	if every, ok := schedule.(cron.ConstantDelaySchedule); ok {
		return args, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: max(every.Delay, time.Second)}}
	}
	next := schedule.Next(now.Add(fireSlack)).UTC()
	return args.forRun(next), &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// fireClock is the clock periodic runs are named by: this machine's, by
// which River fires them (the database's clock, s.Clock, could name the
// fire before or after the one River serves), or s.Now in tests.
func (s *Sweeper) fireClock() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
