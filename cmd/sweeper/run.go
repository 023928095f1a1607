package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/tracing"
)

// startupWait is how long `run` keeps trying to reach its database at
// start before it gives up (exit 1) and leaves restarting to its
// supervisor.
const startupWait = time.Minute

func newRunCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "run the daemon: scheduled sweeps and lookups, until SIGINT or SIGTERM",
		Long: "run is the daemon: the sweep on its cron schedule and the lookups it enqueues, escalation\n" +
			"and Slack delivery, and /healthz, /readyz and /metrics on http.listen (or http.admin_listen),\n" +
			"until SIGINT or SIGTERM. SIGHUP, or POST /-/reload beside /metrics, reloads the configuration:\n" +
			"log.level, [schedules], [review], [[routes]] and providers' rate_limit apply at once; other keys need a restart.\n" +
			"Run as many replicas as you like.",
		Args: noArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error { return runDaemon(cmd.Context(), e) }),
	}
	// A database a newer sweeper migrated is refused at start unless this
	// says to run on it (docs/architecture.md, "Schema versions").
	cmd.Flags().BoolVar(&e.allowNewerSchema, "allow-newer-schema", false,
		"start on a database that has migrations this binary does not know (a newer sweeper migrated it)")
	return cmd
}

func runDaemon(ctx context.Context, e *env) error {
	// The configuration's logger replaces this one once it is read; a
	// SIGHUP before the daemon runs is logged by this one.
	var hupLogger atomic.Pointer[slog.Logger]
	hupLogger.Store(newLogger(e.stderr))
	// SIGHUP reloads the configuration once the daemon runs.
	var reloader atomic.Pointer[app.Reloader]
	// Registered before anything slow, so a SIGHUP sent early does not end
	// the process as the default action would.
	hup, stopHUP := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(hup, syscall.SIGHUP)
	var hupDone sync.WaitGroup
	// Reloads end before the work stops and the pool closes.
	stopReloads := sync.OnceFunc(func() { signal.Stop(hup); close(stopHUP); hupDone.Wait() })
	defer stopReloads()
	hupDone.Go(func() {
		for {
			select {
			case <-hup:
				r := reloader.Load()
				if r == nil {
					hupLogger.Load().Warn("SIGHUP while the daemon starts: no reload; send it again once it runs (the log says \"sweeper running\")")
					continue
				}
				// Reload logs what it applied and what it refused.
				_, _ = r.Reload(context.WithoutCancel(ctx))
			case <-stopHUP:
				return
			}
		}
	})
	e.logLevel = new(slog.LevelVar)
	// A daemon waits for its database a while: it may be starting beside
	// it, or restarting.
	s, closeDB, err := openWaiting(ctx, e, usesAll, startupWait)
	if err != nil {
		return err
	}
	logger := s.Logger
	hupLogger.Store(logger)
	defer closeDB()
	// The daemon alone writes what every replica and command reads: the
	// ready providers' record namespaces, and the routes — the replica
	// that starts last decides them (the others report the difference).
	if err := s.WriteNamespaces(ctx); err != nil {
		return fmt.Errorf("record the providers' record namespaces: %w", err)
	}
	if err := s.WriteRoutes(ctx); err != nil {
		return fmt.Errorf("record the routes: %w", err)
	}
	// A provider not ready at start is asked again in the background; its
	// operations wait meanwhile, and nothing else does.
	awaitCtx, stopAwait := context.WithCancel(ctx)
	var awaiting sync.WaitGroup
	awaiting.Go(func() { s.AwaitProviders(awaitCtx) })
	awaiting.Go(func() { s.WatchRoutes(awaitCtx, s.Config.HTTP.MetricsRefresh.Duration) })
	defer func() { stopAwait(); awaiting.Wait() }() // before the pool closes
	clockCtx, stopClock := context.WithCancel(ctx)
	defer stopClock()
	go s.Clock.Run(clockCtx, time.Minute)
	// The event metrics exist before the work is wired.
	b := thisBuild()
	registry, err := s.UseMetrics(metrics.Build{Version: b.Version, Revision: b.Revision, GoVersion: b.GoVersion})
	if err != nil {
		return err
	}
	// The database may drop the connection while the client starts (a
	// restart, a failover): that too is waited for. The client outlives
	// ctx: the signal ends ctx, and the stop below lets running jobs finish.
	daemon, err := s.StartDaemon(ctx, app.ClientOptions{}, startupWait)
	if err != nil {
		return appError(err)
	}
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	servers, err := s.NewHTTPServers(serveCtx, daemon, registry)
	if err != nil {
		daemon.StopAndCancel(context.Background()) //nolint:errcheck // exiting anyway
		return appError(err)
	}
	go servers.State.Run(serveCtx, s.Config.HTTP.MetricsRefresh.Duration, logger)
	reload, err := s.NewReloader(app.ReloadOptions{Daemon: daemon, Level: e.logLevel, Registry: registry,
		Load: func() (*config.Config, error) { return reloadConfig(e) }})
	if err != nil {
		daemon.StopAndCancel(context.Background()) //nolint:errcheck // exiting anyway
		return err
	}
	servers.HandleAdmin("POST /-/reload", reload)
	// Before /healthz answers: a SIGHUP from then on reloads.
	reloader.Store(reload)
	serving, err := servers.Listen(app.HTTPAddrs{Listen: s.Config.HTTP.Listen, AdminListen: s.Config.HTTP.AdminListen})
	if err != nil {
		daemon.StopAndCancel(context.Background()) //nolint:errcheck // exiting anyway
		return err
	}
	serveErr := make(chan error, len(serving))
	for _, sv := range serving {
		go func() { serveErr <- fmt.Errorf("%s: %w", sv.Key, sv.Server.Serve(sv.L)) }()
	}
	admin := serving[0].L.Addr().String()
	if len(serving) > 1 {
		admin = serving[1].L.Addr().String()
	}
	for _, w := range s.Config.Warnings() {
		logger.Warn("configuration: " + w)
	}
	traces := "off"
	if t := tracing.FromEnv(e.getenv); t.On {
		traces = t.Endpoint
	}
	logger.Info("sweeper running", "version", b.ServiceVersion(), "providers", len(s.Providers), "not_ready", len(s.NotReady()), "sweep", s.Config.Schedules.Sweep,
		"http", serving[0].L.Addr().String(), "admin", admin, "slack", servers.Interactions != nil, "river_ui", s.Config.HTTP.RiverUI,
		"traces", traces)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		logger.Error("http server stopped", "error", err)
	}
	stopReloads()
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
	for _, sv := range serving {
		sv.Server.Shutdown(shutdownCtx) //nolint:errcheck // in-flight requests had their chance
	}
	cancelShutdown()
	stopServing()
	if servers.Interactions != nil {
		servers.Interactions.Close()
	}
	// river.shutdown_grace: a cancelled lookup is retried by the next process.
	grace := s.Config.River.ShutdownGrace.Duration
	logger.Info("stopping: waiting for running jobs", "grace", grace.String())
	stopCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := daemon.Stop(stopCtx); err != nil {
		logger.Warn("jobs still running after the grace period; cancelling them", "error", err)
		cancelCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := daemon.StopAndCancel(cancelCtx); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
	}
	logger.Info("stopped")
	return nil
}

// reloadConfig reads the configuration file and the environment again, as
// `run` read them at start, for a reload.
func reloadConfig(e *env) (*config.Config, error) {
	path := cmp.Or(e.configPath, e.getenv(config.EnvConfig), config.DefaultPath)
	return config.LoadWith(path, providerKinds(), e.getenv, config.Options{})
}
