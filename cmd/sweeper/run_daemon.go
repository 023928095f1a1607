package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/notify"
)

// httpServer is the daemon's endpoint: /healthz, and /slack/interactions
// when Slack is on.
func httpServer(s *jobs.Sweeper, daemon *jobs.Daemon) (*http.Server, *notify.Interactions, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	registry := prometheus.NewRegistry()
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		jobs.NewStateCollector(s.Pool),
	)
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if problem := ready(r.Context(), s, daemon); problem != "" {
			http.Error(w, problem, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	interactions, err := s.Interactions()
	switch {
	case errors.Is(err, jobs.ErrSlackOff):
		interactions = nil
	case err != nil:
		return nil, nil, err
	default:
		mux.Handle("/slack/interactions", interactions)
	}
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
	}, interactions, nil
}

// ready says why the daemon cannot do its work, or "" when it can: the
// database answers, its migrations are current, and the River client runs.
func ready(ctx context.Context, s *jobs.Sweeper, daemon *jobs.Daemon) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.Pool.Ping(ctx); err != nil {
		return "database not reachable"
	}
	pending, err := migrations.New(s.Pool, nil).Pending(ctx)
	switch {
	case err != nil:
		return "migration status unknown"
	case pending > 0:
		return fmt.Sprintf("%d migration(s) pending: run sweeper migrate", pending)
	}
	select {
	case <-daemon.Client.Stopped():
		return "job client stopped"
	default:
	}
	return ""
}

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
	server, interactions, err := httpServer(s, daemon)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper run: %v\n", err)
		daemon.StopAndCancel(context.Background()) //nolint:errcheck // exiting anyway
		return exitUsage
	}
	listener, err := net.Listen("tcp", s.Config.HTTP.Listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper run: http.listen: %v\n", err)
		daemon.StopAndCancel(context.Background()) //nolint:errcheck // exiting anyway
		return exitFailure
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- server.Serve(listener) }()
	logger.Info("sweeper running", "providers", len(s.Providers), "sweep", s.Config.Schedules.Sweep,
		"http", listener.Addr().String(), "slack", interactions != nil)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		logger.Error("http server stopped", "error", err)
	}
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
	server.Shutdown(shutdownCtx) //nolint:errcheck // in-flight requests had their chance
	cancelShutdown()
	if interactions != nil {
		interactions.Close()
	}
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
