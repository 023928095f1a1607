package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sweeper/sweeper/jobs"
)

// shutdownGrace is how long running jobs get to finish after SIGTERM before
// they are cancelled; a cancelled lookup is retried by the next process.
const shutdownGrace = 30 * time.Second

func runDaemon(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "run", "run [--config FILE]")
	configPath := configFlag(fs)
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	logger := newLogger(e.stderr)
	s, closeDB, code := open(ctx, e, *configPath, logger)
	if s == nil {
		return code
	}
	defer closeDB()
	daemon, err := s.NewDaemon(jobs.ClientOptions{})
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper run: %v\n", err)
		return exitUsage
	}
	// The daemon's own context outlives ctx: the signal ends ctx, and the
	// stop below is what lets running jobs finish.
	if err := daemon.Start(ctx); err != nil {
		fmt.Fprintf(e.stderr, "sweeper run: start: %v\n", err)
		return exitFailure
	}
	logger.Info("sweeper running", "providers", len(s.Providers), "sweep", s.Config.Schedules.Sweep)

	<-ctx.Done()
	logger.Info("stopping: waiting for running jobs", "grace", shutdownGrace)
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := daemon.Stop(stopCtx); err != nil {
		logger.Warn("jobs still running after the grace period; cancelling them", "error", err)
		cancelCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := daemon.StopAndCancel(cancelCtx); err != nil {
			fmt.Fprintf(e.stderr, "sweeper run: stop: %v\n", err)
			return exitFailure
		}
	}
	logger.Info("stopped")
	return exitOK
}
