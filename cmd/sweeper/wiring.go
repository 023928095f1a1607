package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/providers"
)

// open loads the configuration, connects, checks that the database is
// migrated, and builds the providers: what every command that looks
// operations up needs. Its errors are ready for the command to return: a
// bad configuration is a configError, anything else a failure.
func open(ctx context.Context, e *env, logger *slog.Logger) (*app.App, func(), error) {
	return openWaiting(ctx, e, logger, 0)
}

// openNoLookups is open for a command that never calls a provider
// (tickets, outbox, notify): no provider is built, so their credentials
// need not be set, and the Sweeper it returns has none.
func openNoLookups(ctx context.Context, e *env, logger *slog.Logger) (*app.App, func(), error) {
	cfg, _, err := loadConfigNoLookups(e)
	if err != nil {
		return nil, nil, err
	}
	return connectSweeper(ctx, e, cfg, nil, logger, 0)
}

// openWaiting is open, retrying for up to wait while the database cannot
// be reached or answered with an error (it is starting, restarting, or
// failing over): a daemon started beside its database waits for it
// instead of exiting. A missing migration is not waited for.
func openWaiting(ctx context.Context, e *env, logger *slog.Logger, wait time.Duration) (*app.App, func(), error) {
	cfg, _, err := loadConfig(e)
	if err != nil {
		return nil, nil, err
	}
	provs, err := app.BuildProviders(cfg, providerKinds(), e.getenv, logger)
	if err != nil {
		return nil, nil, configError(err)
	}
	return connectSweeper(ctx, e, cfg, provs, logger, wait)
}

// connectSweeper connects (waiting as openWaiting says), checks the
// migrations and syncs the clock.
func connectSweeper(ctx context.Context, e *env, cfg *config.Config, provs map[string]*providers.Provider,
	logger *slog.Logger, wait time.Duration) (*app.App, func(), error) {
	var pool *pgxpool.Pool
	var pending int
	err := retryFor(ctx, logger, wait, "database not ready; trying again", func() error {
		var err error
		pool, pending, err = reach(ctx, cfg)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if pending > 0 {
		pool.Close()
		return nil, nil, fmt.Errorf("the database lacks %d migration(s): run 'sweeper migrate' first", pending)
	}
	// One clock for every replica: the database's.
	clock := ledger.NewClock(pool, nil)
	if offset, err := clock.Sync(ctx); err != nil {
		logger.Warn("cannot read the database's clock; using this machine's", "error", err)
	} else if offset.Abs() > time.Minute {
		logger.Warn("this machine's clock disagrees with the database's; deciding by the database's", "offset", offset.String())
	}
	s := &app.App{Config: cfg, Pool: pool, Providers: provs, Logger: logger, Getenv: e.getenv, Clock: clock}
	s.TrackHealth()
	return s, func() {
		for _, p := range provs {
			p.Close() // a postgres provider's own pool
		}
		pool.Close()
	}, nil
}

// reach connects and counts the migrations the database lacks.
func reach(ctx context.Context, cfg *config.Config) (*pgxpool.Pool, int, error) {
	pool, err := app.Connect(ctx, cfg)
	if err != nil {
		return nil, 0, err
	}
	pending, err := migrations.New(pool, nil).Pending(ctx)
	if err != nil {
		pool.Close()
		return nil, 0, err
	}
	return pool, pending, nil
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
		logger.Warn(msg, "error", err, "retry_in", delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
	}
}
