package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/tracing"
)

// open loads the configuration and opens the App on it (app.Open), with
// the logger the configuration's [log] section asks for, for a command
// that reads only what u says: without lookups, no provider is
// built (their credentials need not be set) and the App has none. Its
// errors are ready for the command to return: a bad configuration is a
// configError, anything else a failure.
func open(ctx context.Context, e *env, u uses) (*app.App, func(), error) {
	return openWaiting(ctx, e, u, 0)
}

// openWaiting is open, waiting up to wait for the database (a daemon
// started beside its database waits for it instead of exiting).
func openWaiting(ctx context.Context, e *env, u uses, wait time.Duration) (*app.App, func(), error) {
	cfg, _, err := loadConfigFor(e, u)
	if err != nil {
		return nil, nil, err
	}
	opts := app.OpenOptions{Logger: configuredLogger(e.stderr, cfg.Log, slog.LevelDebug), Wait: wait, NoLookups: true,
		AllowNewerSchema: e.allowNewerSchema}
	if e.logLevel != nil {
		opts.Logger = reloadableLogger(e.stderr, cfg.Log, e.logLevel)
	}
	if u.lookups {
		opts.Kinds, opts.NoLookups = providerKinds(), false
	}
	if !u.lookups && !u.slack {
		return openApp(ctx, e, cfg, opts)
	}
	// A command that asks providers or Slack is traced when the standard
	// OpenTelemetry variables say so; otherwise tr is nil and costs nothing.
	tr, err := tracing.Start(ctx, e.getenv, thisBuild().ServiceVersion(), opts.Logger)
	if err != nil {
		return nil, nil, err
	}
	opts.Tracing = tr
	s, closeApp, err := openApp(ctx, e, cfg, opts)
	if err != nil {
		tr.Shutdown(context.WithoutCancel(ctx)) //nolint:errcheck // nothing was traced yet
		return nil, nil, err
	}
	return s, func() {
		closeApp()
		// The last spans, within tracing.ShutdownTimeout: a collector
		// that is down does not hold the exit.
		if err := tr.Shutdown(context.WithoutCancel(ctx)); err != nil {
			s.Logger.Warn("traces: the last spans were not all sent", "error", err)
		}
	}, nil
}

func openApp(ctx context.Context, e *env, cfg *config.Config, opts app.OpenOptions) (*app.App, func(), error) {
	opts.Getenv = e.getenv
	s, closeApp, err := app.Open(ctx, cfg, opts)
	return s, closeApp, appError(err)
}

// notReadyProblems names, by configuration key, each provider the
// command could not ask which account it reaches: its operations were
// left pending.
func notReadyProblems(s *app.App) []string {
	notReady := s.NotReady()
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(notReady)) {
		problems = append(problems, fmt.Sprintf("providers.%s: not ready, its operations stay pending: %v", name, notReady[name]))
	}
	return problems
}

// appError makes an app.ConfigError a configError; other errors pass as
// they are.
func appError(err error) error {
	if cfgErr, ok := errors.AsType[*app.ConfigError](err); ok {
		return configError(cfgErr.Err)
	}
	return err
}
