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
	"github.com/sweeper/sweeper/notify/interact"
	"github.com/sweeper/sweeper/web"
)

// riverUIPrefix is where River's UI is served when http.river_ui is on.
const riverUIPrefix = "/riverui"

// Servers are the daemon's HTTP servers: Public faces outside (Slack
// interactivity); Admin serves /healthz, /readyz, /metrics and River's UI
// — nil when http.admin_listen is not set, and then Public serves them
// too. State is the metrics' state reading, which the daemon runs
// ([StateCollector.Run]); Interactions is the Slack endpoint, nil when
// Slack is off (nothing to close).
type Servers struct {
	Public, Admin *http.Server
	State         *StateCollector
	Interactions  *interact.Endpoint
	// admin is the mux the admin endpoints are served from.
	admin *http.ServeMux
}

// HandleAdmin serves h at pattern beside /metrics and /readyz: on the
// admin listener when there is one, else on the public one.
func (sv Servers) HandleAdmin(pattern string, h http.Handler) { sv.admin.Handle(pattern, h) }

// NewHTTPServers returns the daemon's endpoints: /healthz, /readyz,
// /metrics (from registry, where the event metrics already are), River's
// UI at /riverui when http.river_ui is on and the review page at /review/
// when web.enabled is — on the admin server when http.admin_listen is
// set, else on the public one — and
// /slack/interactions on the public one when Slack is on. serveCtx bounds
// the UI's background work: end it once the servers have shut down. A
// River UI without its credentials, or Slack without its secrets, is a
// *ConfigError.
func (s *App) NewHTTPServers(serveCtx context.Context, daemon *Daemon, registry *prometheus.Registry) (Servers, error) {
	public, admin := http.NewServeMux(), http.NewServeMux()
	adminOn := s.Config.HTTP.AdminListen != ""
	if !adminOn {
		admin = public
	}
	admin.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	state := NewStateCollector(s.Pool, s.Ledger(), slices.Sorted(maps.Keys(s.Providers)))
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		state,
		s.StartCollector(),
	)
	admin.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	admin.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if problem := ready(r.Context(), s, daemon); problem != "" {
			http.Error(w, problem, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if s.Config.HTTP.RiverUI {
		ui, err := riverUI(serveCtx, s, daemon)
		if err != nil {
			return Servers{}, &ConfigError{err}
		}
		admin.Handle(riverUIPrefix+"/", ui)
	}
	switch page, err := s.ReviewPage(); {
	case errors.Is(err, ErrWebOff):
	case err != nil:
		return Servers{}, &ConfigError{err}
	default:
		// The page is for the people who review: beside the other pages
		// they open (WebListen), not on the listener that faces Slack.
		admin.Handle(web.Prefix+"/", page)
	}
	interactions, err := s.Interactions()
	switch {
	case errors.Is(err, ErrSlackOff):
		interactions = nil
	case err != nil:
		return Servers{}, &ConfigError{err}
	default:
		public.Handle("/slack/interactions", interactions)
	}
	out := Servers{Public: newServer(public), State: state, Interactions: interactions, admin: admin}
	if adminOn {
		out.Admin = newServer(admin)
	}
	return out, nil
}

func newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
	}
}

// readyTimeout bounds /readyz's look at the database.
const readyTimeout = 3 * time.Second

// ready says why the daemon cannot do its work, or "" when it can: the
// database answers, its migrations are current, and the River client runs.
func ready(ctx context.Context, s *App, daemon *Daemon) string {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
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
