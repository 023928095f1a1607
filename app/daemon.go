package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/robfig/cron/v3"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/logs"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/settle"
)

// ClientOptions tune a River client beyond the configuration, for tests
// and the demo.
type ClientOptions struct {
	// FetchPollInterval overrides River's poll interval (default 1s).
	FetchPollInterval time.Duration
	// NoPeriodic leaves the periodic jobs, sweep and escalate, out (tests
	// insert them).
	NoPeriodic bool
}

// Daemon is a River client running sweeper's jobs.
type Daemon struct {
	// Client is the River client, for inserting jobs.
	Client *river.Client[pgx.Tx]
	// watch says the database's outages while the client runs.
	watch *databaseWatch
	// periodic is whether the client runs the periodic jobs.
	periodic bool
	// notify is the delivery worker, whose other receivers a reload
	// replaces.
	notify *jobs.NotifyWorker
}

// Start starts the client, and the watch on its database that says an
// outage once and quiets River's lines meanwhile. ctx does not bound it:
// stop it with Stop or StopAndCancel.
func (d *Daemon) Start(ctx context.Context) error {
	if err := d.Client.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	if d.watch != nil {
		go d.watch.run(d.Client.Stopped())
	}
	return nil
}

// Stop stops fetching jobs and waits, within ctx, for running jobs to
// finish and their outcomes to commit.
func (d *Daemon) Stop(ctx context.Context) error { return d.Client.Stop(ctx) }

// StopAndCancel cancels running jobs (they are retried by the next process)
// and waits for them to return.
func (d *Daemon) StopAndCancel(ctx context.Context) error { return d.Client.StopAndCancel(ctx) }

// NewDaemon returns a River client running sweeper's workers and periodic
// jobs in schema sweeper. Every replica registers the same periodic jobs;
// River's leader alone enqueues them, and each sweep and escalation scan is
// unique per period of its schedule, so a restart or a leader change does
// not double it.
func (s *App) NewDaemon(opts ClientOptions) (*Daemon, error) {
	workers := river.NewWorkers()
	lookup := jobs.NewLookupBatchWorker(s.Settler())
	river.AddWorker(workers, lookup)
	sweepTimeout := s.Config.Sweep.Timeout.Duration
	// The River sweep hands each provider's backlog on in bounded pieces:
	// the queue, and memory, stay the same with a million stale rows.
	scanner := s.Scanner()
	scanner.Admission = settle.AdmissionHorizon
	scanner.Outages = s.Outages()
	river.AddWorker(workers, jobs.NewSweepWorker(scanner, s.Pool, sweepTimeout, s.Logger))
	river.AddWorker(workers, jobs.NewEscalateWorker(s.Escalator(), jobs.Scan{
		Timeout:      sweepTimeout,
		BatchSize:    s.Config.Sweep.BatchSize,
		QueryTimeout: s.Config.Sweep.QueryTimeout.Duration,
	}, s.Logger))
	river.AddWorker(workers, jobs.NewEscalateTicketWorker(s.Escalator(), lookup.Timeout(nil)))
	river.AddWorker(workers, jobs.NewRelookupTicketWorker(s.Escalator(), lookup.Timeout(nil)))
	river.AddWorker(workers, jobs.NewPruneWorker(s.Pruner()))
	river.AddWorker(workers, jobs.NewAuditWorker(s.Auditor()))
	// With Slack off the outbox is still dispatched, to nowhere: each due
	// row is recorded skipped rather than left pending.
	dispatcher, err := s.Dispatcher()
	if errors.Is(err, ErrSlackOff) {
		s.Logger.Info("slack is off (slack.channel is empty): alerts are recorded in the outbox as skipped (no_receiver), not delivered")
		dispatcher, err = s.SkippingDispatcher()
	}
	if err != nil {
		return nil, err
	}
	others, err := s.OtherDispatchers()
	if err != nil {
		return nil, err
	}
	notifyWorker := jobs.NewNotifyWorker(dispatcher, others...)
	river.AddWorker(workers, notifyWorker)

	var periodic []*river.PeriodicJob
	if !opts.NoPeriodic {
		var err error
		if periodic, err = s.periodicJobs(s.Config.Schedules); err != nil {
			return nil, err
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
		jobs.QueueLookup:   {MaxWorkers: s.Config.River.MaxWorkers},
		jobs.QueueNotify:   {MaxWorkers: 4},
	}
	// River does nothing but talk to the database: while the database is
	// known down, its lines, each failing in its own words, are DEBUG, and
	// the watch says the outage once.
	watch := &databaseWatch{ping: s.Pool.Ping, outage: logs.NewOutage(databaseProbeTimeout + time.Second), logger: s.Logger}
	var middleware []rivertype.Middleware
	if s.Tracing.On() {
		// A span for each job worked: the lookups, statements and Slack
		// calls it makes are its children.
		middleware = append(middleware, s.Tracing.RiverMiddleware())
	}
	client, err := river.NewClient(riverpgxv5.New(s.Pool), &river.Config{
		Middleware:           middleware,
		Schema:               migrations.Schema,
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         periodic,
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: rescueAfter,
		FetchCooldown:        jobs.FetchCooldown,
		FetchPollInterval:    opts.FetchPollInterval,
		Logger:               slog.New(watch.outage.Handler(jobs.RiverLogger(s.Logger).Handler())),
		// River's own cleaner, on the leader, deletes finished jobs:
		// completed and cancelled after retention.jobs; discarded ones (a
		// job that failed for good) keep River's 7 days.
		CompletedJobRetentionPeriod: s.Config.Retention.Jobs.Duration,
		CancelledJobRetentionPeriod: s.Config.Retention.Jobs.Duration,
	})
	if err != nil {
		return nil, err
	}
	return &Daemon{Client: client, watch: watch, periodic: !opts.NoPeriodic, notify: notifyWorker}, nil
}

// periodicJobs are the periodic jobs on schedules: sweep, escalate, prune,
// audit and notify. An expression that does not parse is an error naming its
// key.
func (s *App) periodicJobs(schedules config.Schedules) ([]*river.PeriodicJob, error) {
	var periodic []*river.PeriodicJob
	for _, j := range []struct {
		id, key, expr string
		args          jobs.PeriodicArgs
	}{
		{"sweep", "schedules.sweep", schedules.Sweep, jobs.SweepArgs{}},
		{"escalate", "schedules.escalate", schedules.Escalate, jobs.EscalateArgs{}},
		{"prune", "schedules.prune", schedules.Prune, jobs.PruneArgs{}},
		{"audit", "schedules.audit", schedules.Audit, jobs.AuditArgs{}},
		{"notify", "schedules.notify", schedules.Notify, jobs.NotifyArgs{}},
	} {
		schedule, err := cron.ParseStandard(j.expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j.key, err)
		}
		periodic = append(periodic, jobs.NewPeriodicJob(j.id, schedule, j.args, s.fireClock))
	}
	return periodic, nil
}

// ReplacePeriodic replaces the client's periodic jobs with periodic: the
// scheduled runs of the old ones are cancelled, jobs already enqueued or
// running are not touched, and each new one runs once at once (RunOnStart;
// each run is unique per period of its schedule, so this doubles none).
// A daemon started without periodic jobs keeps none.
func (d *Daemon) ReplacePeriodic(periodic []*river.PeriodicJob) error {
	if !d.periodic {
		return nil
	}
	bundle := d.Client.PeriodicJobs()
	bundle.Clear()
	_, err := bundle.AddManySafely(periodic)
	return err
}

// fireClock is the clock periodic runs are named by: this machine's, by
// which River fires them (the database's clock, s.Clock, could name the
// fire before or after the one River serves), or s.Now in tests.
func (s *App) fireClock() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
