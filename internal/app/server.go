package app

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"riverqueue.com/riverui"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/notify"
)

// riverUIPrefix is where River's UI is served when http.river_ui is on.
const riverUIPrefix = "/riverui"

// NewHTTPServer returns the daemon's endpoint: /healthz, /readyz,
// /metrics (from registry, where the event metrics already are), River's
// UI at /riverui when http.river_ui is on, and /slack/interactions when
// Slack is on; and the interactivity endpoint it serves (nil when Slack is
// off: nothing to close). serveCtx bounds the UI's background work: end it
// once the server has shut down. A River UI without its credentials, or
// Slack without its secrets, is a *ConfigError.
func (s *App) NewHTTPServer(serveCtx context.Context, daemon *Daemon, registry *prometheus.Registry) (*http.Server, *notify.Interactions, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		NewStateCollector(s.Pool, slices.Sorted(maps.Keys(s.Providers))),
	)
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if problem := ready(r.Context(), s, daemon); problem != "" {
			http.Error(w, problem, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if s.Config.HTTP.RiverUI {
		ui, err := riverUI(serveCtx, s, daemon)
		if err != nil {
			return nil, nil, &ConfigError{err}
		}
		mux.Handle(riverUIPrefix+"/", ui)
	}
	interactions, err := s.Interactions()
	switch {
	case errors.Is(err, ErrSlackOff):
		interactions = nil
	case err != nil:
		return nil, nil, &ConfigError{err}
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
func ready(ctx context.Context, s *App, daemon *Daemon) string {
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

// riverUI returns River's UI over the daemon's client, started, behind
// HTTP basic auth with the credentials of SWEEPER_RIVERUI_USER and
// SWEEPER_RIVERUI_PASSWORD (or their _FILE variants): the UI has no
// authentication of its own, and it can cancel, retry and delete jobs.
func riverUI(ctx context.Context, s *App, daemon *Daemon) (http.Handler, error) {
	user, err := config.Secret(s.Getenv, config.EnvRiverUIUser)
	if err != nil {
		return nil, fmt.Errorf("http.river_ui: %w", err)
	}
	if strings.Contains(user, ":") {
		return nil, fmt.Errorf("http.river_ui: %s must not contain ':' (basic auth cannot carry it)", config.EnvRiverUIUser)
	}
	password, err := config.Secret(s.Getenv, config.EnvRiverUIPass)
	if err != nil {
		return nil, fmt.Errorf("http.river_ui: %w", err)
	}
	ui, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(daemon.Client, nil),
		Logger:    s.Logger.With("component", "riverui"),
		Prefix:    riverUIPrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("http.river_ui: %w", err)
	}
	if err := ui.Start(ctx); err != nil {
		return nil, fmt.Errorf("http.river_ui: start: %w", err)
	}
	return basicAuth("sweeper River UI", user, password, ui), nil
}

// basicAuth passes on the requests that carry user and password and
// answers the others 401 with a challenge for realm. Both are compared
// through their SHA-256, in constant time: neither a value nor its length
// shows in the timing.
func basicAuth(realm, user, password string, next http.Handler) http.Handler {
	wantUser, wantPassword := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	challenge := fmt.Sprintf("Basic realm=%q, charset=\"UTF-8\"", realm)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUser, gotPassword, ok := r.BasicAuth()
		u, p := sha256.Sum256([]byte(gotUser)), sha256.Sum256([]byte(gotPassword))
		// Both comparisons always run: which one failed does not show either.
		userOK := subtle.ConstantTimeCompare(u[:], wantUser[:])
		passwordOK := subtle.ConstantTimeCompare(p[:], wantPassword[:])
		if !ok || userOK&passwordOK != 1 {
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
