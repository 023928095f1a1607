package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/app"
)

// open loads the configuration and opens the App on it (app.Open): what
// every command that looks operations up needs. Its errors are ready for
// the command to return: a bad configuration is a configError, anything
// else a failure.
func open(ctx context.Context, e *env, logger *slog.Logger) (*app.App, func(), error) {
	return openWaiting(ctx, e, logger, 0)
}

// openNoLookups is open for a command that never calls a provider
// (tickets, outbox, notify): no provider is built, so their credentials
// need not be set, and the App it returns has none.
func openNoLookups(ctx context.Context, e *env, logger *slog.Logger) (*app.App, func(), error) {
	cfg, _, err := loadConfigNoLookups(e)
	if err != nil {
		return nil, nil, err
	}
	return openApp(ctx, e, cfg, app.OpenOptions{Logger: logger, NoLookups: true})
}

// openWaiting is open, waiting up to wait for the database (a daemon
// started beside its database waits for it instead of exiting).
func openWaiting(ctx context.Context, e *env, logger *slog.Logger, wait time.Duration) (*app.App, func(), error) {
	cfg, _, err := loadConfig(e)
	if err != nil {
		return nil, nil, err
	}
	return openApp(ctx, e, cfg, app.OpenOptions{Kinds: providerKinds(), Logger: logger, Wait: wait})
}

func openApp(ctx context.Context, e *env, cfg *config.Config, opts app.OpenOptions) (*app.App, func(), error) {
	opts.Getenv = e.getenv
	s, closeApp, err := app.Open(ctx, cfg, opts)
	return s, closeApp, appError(err)
}

// appError makes an app.ConfigError a configError; other errors pass as
// they are.
func appError(err error) error {
	if cfgErr, ok := errors.AsType[*app.ConfigError](err); ok {
		return configError(cfgErr.Err)
	}
	return err
}
