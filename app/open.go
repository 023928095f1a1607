package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/providers"
)

// OpenOptions say what [Open] builds beside the pool.
type OpenOptions struct {
	// Kinds are the provider adapters this build knows; unused with
	// NoLookups.
	Kinds providers.Kinds
	// Getenv reads the providers' credentials and the secrets the App
	// reads later (SLACK_BOT_TOKEN); nil reads none.
	Getenv func(string) string
	// Logger logs the waits and the clock's offset, and becomes the App's.
	Logger *slog.Logger
	// NoLookups builds no provider, for a command that never calls one
	// (tickets, outbox, notify): their credentials need not be set, and
	// the App has none.
	NoLookups bool
	// Tracing traces the database calls, the lookups, the HTTP exchanges
	// with providers and Slack, the River jobs and the passes of the
	// App's once-runners; nil: none, at no cost. The caller shuts it down.
	Tracing *tracing.Tracing
	// Wait is how long to keep trying while the database cannot be reached
	// or answers with an error (it is starting, restarting, or failing
	// over); zero tries once. A missing migration is not waited for.
	Wait time.Duration
	// AllowNewerSchema opens a database that has migrations this binary
	// does not know (a newer sweeper migrated it), with a WARN; without
	// it, [Open] refuses such a database with a *migrations.AheadError.
	AllowNewerSchema bool
}

// ConfigError is a configuration [Open] or [App.StartDaemon] cannot build
// from (a provider's settings or credentials, the schedules): the caller
// should report it as the configuration's mistake, not as a failure.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// Open builds the providers, reads which account each reaches
// ([ReadNamespaces]), connects, checks that the database is migrated and
// syncs the database's clock: what every command that reads or settles
// operations needs. It writes nothing shared: a command that settles
// records the namespaces itself ([App.WriteNamespaces]), and the daemon
// alone the routes ([App.WriteRoutes]). A provider whose account cannot
// be read is not ready (its operations wait; see [App.NotReady],
// [App.AwaitProviders]) and stops nothing. It returns the App and the
// function that closes its pool and the providers' own. A provider it
// cannot build is a *ConfigError; a missing migration or an unreachable
// database (after opts.Wait) another error.
func Open(ctx context.Context, cfg *config.Config, opts OpenOptions) (*App, func(), error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var provs map[string]*providers.Provider
	tokens := &storedTokens{}
	if !opts.NoLookups {
		var err error
		provs, err = buildProviders(cfg, opts.Kinds, opts.Getenv, logger, opts.Tracing, tokens)
		if err != nil {
			return nil, nil, &ConfigError{err}
		}
	}
	closeProviders := func() {
		for _, p := range provs {
			p.Close() // a postgres provider's own pool
		}
	}
	// Each one not ready has said so; the others are not held back.
	_ = ReadNamespaces(ctx, cfg, provs, logger)
	var pool *pgxpool.Pool
	var versions []migrations.Version
	err := retryFor(ctx, logger, opts.Wait, "database not ready; trying again", func() error {
		var err error
		pool, versions, err = reach(ctx, cfg, opts.Tracing)
		return err
	})
	if err != nil {
		closeProviders()
		return nil, nil, err
	}
	schema := migrations.Counts(versions)
	var ahead error
	if u := migrations.Unknown(versions); len(u) > 0 {
		ahead = &migrations.AheadError{Unknown: u}
	}
	switch {
	case ahead != nil && !opts.AllowNewerSchema:
		pool.Close()
		closeProviders()
		return nil, nil, fmt.Errorf("%w (sweeper run --allow-newer-schema starts anyway)", ahead)
	case ahead != nil:
		logger.Warn("running on a database ahead of this binary (--allow-newer-schema)", "error", ahead)
	}
	if schema.Pending > 0 {
		pool.Close()
		closeProviders()
		return nil, nil, fmt.Errorf("the database lacks %d migration(s): run 'sweeper migrate' first", schema.Pending)
	}
	if err := checkAdopted(ctx, pool, cfg.LedgerTable(), logger); err != nil {
		pool.Close()
		closeProviders()
		return nil, nil, err
	}
	// One clock for every replica: the database's.
	clock := ledger.NewClock(pool, nil)
	if offset, err := clock.Sync(ctx); err != nil {
		logger.Warn("cannot read the database's clock; using this machine's", "error", err)
	} else if offset.Abs() > time.Minute {
		logger.Warn("this machine's clock disagrees with the database's; deciding by the database's", "offset", offset.String())
	}
	tokens.bind(health.NewTokenStore(pool))
	s := &App{Config: cfg, Pool: pool, Providers: provs, Logger: logger, Getenv: opts.Getenv, Clock: clock, Tracing: opts.Tracing}
	s.TrackHealth()
	return s, func() {
		closeProviders()
		pool.Close()
	}, nil
}

// StartDaemon builds and starts the River client. The database may drop
// the connection while the client starts (a restart, a failover): that is
// retried with a new client for up to wait, as [Open] retries reaching
// the database. The client's own context outlives ctx (see
// [Daemon.Start]): stop it with Stop or StopAndCancel. A configuration
// the client cannot be built from is a *ConfigError.
func (s *App) StartDaemon(ctx context.Context, opts ClientOptions, wait time.Duration) (*Daemon, error) {
	daemon, err := s.NewDaemon(opts)
	if err != nil {
		return nil, &ConfigError{err}
	}
	err = retryFor(ctx, s.Logger, wait, "job client did not start; trying again", func() error {
		err := daemon.Start(ctx)
		if err != nil {
			// The next try gets a client that was never started; this
			// configuration built one a moment ago, so it builds again.
			if fresh, newErr := s.NewDaemon(opts); newErr == nil {
				daemon = fresh
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	return daemon, nil
}

// reach connects and lists the migrations, applied, pending or unknown.
func reach(ctx context.Context, cfg *config.Config, tr *tracing.Tracing) (*pgxpool.Pool, []migrations.Version, error) {
	pool, err := connect(ctx, cfg, tr)
	if err != nil {
		return nil, nil, err
	}
	versions, err := migrations.New(pool, nil).Status(ctx)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, versions, nil
}

// retryFor calls try until it succeeds, waiting 1 s, 2 s … at most 5 s
// between calls and logging each failure as msg, for up to wait (zero: one
// call) or until ctx ends. It returns try's last error.
func retryFor(ctx context.Context, logger *slog.Logger, wait time.Duration, msg string, try func() error) error {
	giveUp := time.Now().Add(wait)
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil {
			return nil
		}
		delay := min(time.Duration(attempt)*time.Second, 5*time.Second)
		if time.Now().Add(delay).After(giveUp) {
			return err
		}
		// The attempt makes each line its own for the log's rate limit
		// (internal/logs): the backoff bounds them.
		logger.Warn(msg, "error", err, "attempt", attempt, "retry_in", delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
	}
}

// checkAdopted refuses to run on an adopted ledger table sweeper cannot
// use — missing, a view, a required column missing or of the wrong type,
// no unique op_key — with the reasons: nothing is read or written there
// until `sweeper adopt` says it is usable. What works but should be
// fixed (a required column that allows NULL: its NULL rows become their
// own invalid_operation tickets) is a WARN each. ledger.operations needs
// no check: the migrations made it.
func checkAdopted(ctx context.Context, pool *pgxpool.Pool, t *ledger.Table, logger *slog.Logger) error {
	if t.Native() {
		return nil
	}
	in, err := ledger.CheckUsable(ctx, pool, t)
	if err != nil {
		return fmt.Errorf("check the ledger table %s: %w", t.Name(), err)
	}
	if !in.Usable {
		return fmt.Errorf("the ledger table %s ([ledger] table) cannot be used: %s; `sweeper adopt` prints the whole report",
			t.Name(), strings.Join(in.Refusals, "; "))
	}
	for _, c := range in.Columns {
		if c.Nullable && slices.Contains(ledger.NotNullColumns, c.Key) {
			logger.Warn("a required column of the ledger table allows NULL: "+c.Problem, "table", t.Name(), "column", c.Column)
		}
	}
	return nil
}
