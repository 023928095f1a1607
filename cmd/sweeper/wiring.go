package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/migrations"
)

// open loads the configuration, connects, checks that the database is
// migrated, and builds the providers: what every command that works on the
// ledger needs. On failure it has printed why and returns the exit code.
func open(ctx context.Context, e *env, configPath string, logger *slog.Logger) (*jobs.Sweeper, func(), int) {
	cfg, _, code := loadConfig(e, configPath)
	if cfg == nil {
		return nil, nil, code
	}
	provs, err := jobs.BuildProviders(cfg, providerKinds(), e.getenv, logger)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper: %v\n", err)
		return nil, nil, exitUsage
	}
	pool, err := connect(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper: %v\n", err)
		return nil, nil, exitFailure
	}
	pending, err := migrations.New(pool, nil).Pending(ctx)
	if err != nil {
		pool.Close()
		fmt.Fprintf(e.stderr, "sweeper: %v\n", err)
		return nil, nil, exitFailure
	}
	if pending > 0 {
		pool.Close()
		fmt.Fprintf(e.stderr, "sweeper: the database lacks %d migration(s): run 'sweeper migrate' first\n", pending)
		return nil, nil, exitFailure
	}
	return &jobs.Sweeper{Config: cfg, Pool: pool, Providers: provs, Logger: logger, Getenv: e.getenv}, pool.Close, -1
}
