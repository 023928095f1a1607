package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify"
)

// ConfigChanges are the keys in which a configuration differs from the
// running one, by what a reload can do with them.
type ConfigChanges struct {
	// Live are the keys a reload applies to the running daemon.
	Live []string
	// Restart are the keys only a restart applies: the daemon keeps
	// running with their old values.
	Restart []string
}

// liveKeys are the keys (a key, or a table with everything under it) a
// reload applies while the daemon runs; every other key needs a restart.
// A provider's pacing is live too ([liveProviderKeys]). Slack's settings
// need a restart: its client, channels and interactivity are built once.
var liveKeys = []string{"log.level", "schedules", "review", "routes", "pagerduty", "webhook"}

// liveProviderKeys are the settings of a provider block a reload applies
// ([providers.Provider.SetLimits]): its pacing, never its identity — the
// kind, where it is reached, with which credentials, which account.
// outage_after only while it stays above 0 ([liveKey]).
var liveProviderKeys = []string{"rate_limit", "concurrency", "stale_after", "lookup_timeout", "lookup_budget",
	"settle_window", "in_flight_for", "outage_after", "max_outage"}

// liveKey reports whether key may change, from was to now, while the
// daemon runs. A provider's health is kept from the start only when its
// outage_after is above 0: turning it on or off needs a restart.
func liveKey(key, was, now string) bool {
	for _, k := range liveKeys {
		if key == k || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	rest, ok := strings.CutPrefix(key, "providers.")
	if !ok {
		return false
	}
	name, setting, ok := strings.Cut(rest, ".")
	if !ok || name == "" || !slices.Contains(liveProviderKeys, setting) {
		return false
	}
	return setting != "outage_after" || (was != "0" && now != "0")
}

// DiffConfig compares two configurations' [config.Config.Values], the
// running one's and the next one's, and sorts the keys that differ into
// those a reload applies and those that need a restart. A provider block
// added or removed is one key, providers.NAME, which needs a restart. It
// is pure: it compares, and decides nothing else.
func DiffConfig(running, next map[string]string) ConfigChanges {
	var out ConfigChanges
	seen := map[string]bool{}
	keys := slices.Sorted(maps.Keys(running))
	for k := range next {
		if _, ok := running[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, key := range keys {
		was, inRunning := running[key]
		now, inNext := next[key]
		if inRunning == inNext && was == now {
			continue
		}
		if block, ok := providerBlock(key); ok {
			_, before := running[block+".kind"]
			_, after := next[block+".kind"]
			if before != after {
				key = block
			}
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if liveKey(key, was, now) {
			out.Live = append(out.Live, key)
		} else {
			out.Restart = append(out.Restart, key)
		}
	}
	slices.Sort(out.Live)
	slices.Sort(out.Restart)
	return out
}

// providerBlock is the providers.NAME block key lies in.
func providerBlock(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "providers.")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, ".")
	return "providers." + name, ok
}

// Reloader re-reads the configuration of a running daemon (SIGHUP, POST
// /-/reload) and applies what may change live: log.level, the schedules,
// review (owners, escalation, windows, re-lookups), the routes and each
// provider's pacing ([liveProviderKeys]: rate limit, concurrency,
// stale_after, timeout, budget, settle and in-flight waits, outage
// numbers), and the PagerDuty and webhook receivers (replaced whole
// between delivery passes). A configuration with errors is refused whole: the
// running one is kept and each error logged. Keys that need a restart
// (listed by [DiffConfig]) are refused one by one, each a WARN naming the
// key, their running values kept, and the rest is applied. Reloads run
// one at a time.
type Reloader struct {
	app    *App
	daemon *Daemon
	load   func() (*config.Config, error)
	level  *slog.LevelVar

	mu sync.Mutex
	// applied is the configuration whose live keys are in effect.
	applied     *config.Config
	successful  prometheus.Gauge
	lastSuccess prometheus.Gauge
}

// ReloadOptions are what a [Reloader] needs beside the App.
type ReloadOptions struct {
	// Daemon is the River client whose periodic jobs a schedule change
	// replaces.
	Daemon *Daemon
	// Load reads the configuration file and the environment again, as at
	// start.
	Load func() (*config.Config, error)
	// Level is the level of the App's logger, which log.level sets; nil:
	// log.level needs a restart.
	Level *slog.LevelVar
	// Registry gets sweeper_config_last_reload_successful and
	// sweeper_config_last_reload_success_timestamp_seconds.
	Registry prometheus.Registerer
}

// NewReloader returns the daemon's reloader, its metrics registered: the
// configuration it started with counts as the last successful reload.
func (s *App) NewReloader(opts ReloadOptions) (*Reloader, error) {
	r := &Reloader{app: s, daemon: opts.Daemon, load: opts.Load, level: opts.Level, applied: s.Config,
		successful: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sweeper_config_last_reload_successful",
			Help: "Whether the last configuration reload put the whole file in effect (1), or was refused or left keys that need a restart (0).",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sweeper_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration was last put in effect whole (at start, or by a reload), in seconds since the epoch.",
		}),
	}
	if err := errors.Join(opts.Registry.Register(r.successful), opts.Registry.Register(r.lastSuccess)); err != nil {
		return nil, fmt.Errorf("reload metrics: %w", err)
	}
	r.successful.Set(1)
	r.lastSuccess.SetToCurrentTime()
	return r, nil
}

// ErrReloadRefused is returned, wrapped with the reasons, by
// [Reloader.Reload] when nothing of the new configuration was applied.
var ErrReloadRefused = errors.New("configuration reload refused; the running configuration is kept")

// Reload reads the configuration again and applies it, as [Reloader]
// says. It returns the keys applied and those left for a restart; an
// error wrapping [ErrReloadRefused] when nothing was applied (the file
// has errors, a route names a receiver that is not running, or the
// routes could not be written).
func (r *Reloader) Reload(ctx context.Context) (ConfigChanges, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changes, err := r.reload(ctx)
	if err != nil {
		r.successful.Set(0)
		if cfgErr, ok := errors.AsType[*config.Error](err); ok {
			// Each problem has its own line, naming its key.
			r.app.Logger.Error("configuration reload refused: the file has errors; the running configuration is kept", "problems", len(cfgErr.Problems))
		} else {
			r.app.Logger.Error("configuration reload refused: the running configuration is kept", "error", err)
		}
		return changes, fmt.Errorf("%w: %w", ErrReloadRefused, err)
	}
	for _, key := range changes.Restart {
		r.app.Logger.Warn("configuration reload: "+key+" changed, but only a restart applies it; its running value is kept", "key", key)
	}
	if len(changes.Restart) == 0 {
		r.successful.Set(1)
		r.lastSuccess.SetToCurrentTime()
	} else {
		r.successful.Set(0)
	}
	r.app.Logger.Info("configuration reloaded", "applied", changes.Live, "needs_restart", changes.Restart)
	return changes, nil
}

func (r *Reloader) reload(ctx context.Context) (ConfigChanges, error) {
	next, err := r.load()
	if err != nil {
		if cfgErr, ok := errors.AsType[*config.Error](err); ok {
			for _, p := range cfgErr.Problems {
				r.app.Logger.Error("configuration reload: " + p.Error())
			}
		}
		return ConfigChanges{}, err
	}
	started, err := r.app.Config.Values()
	if err != nil {
		return ConfigChanges{}, err
	}
	applied, err := r.applied.Values()
	if err != nil {
		return ConfigChanges{}, err
	}
	nextValues, err := next.Values()
	if err != nil {
		return ConfigChanges{}, err
	}
	// What needs a restart is what differs from the configuration the
	// process started with; what is applied, what differs from the last
	// one applied.
	changes := ConfigChanges{Live: DiffConfig(applied, nextValues).Live, Restart: DiffConfig(started, nextValues).Restart}
	if r.level == nil && slices.Contains(changes.Live, "log.level") {
		changes.Live = slices.DeleteFunc(changes.Live, func(k string) bool { return k == "log.level" })
		changes.Restart = append(changes.Restart, "log.level")
	}
	if len(changes.Live) == 0 {
		return changes, nil
	}
	// What can fail comes first, so that a failure applies nothing.
	var periodic []*river.PeriodicJob
	if changed(changes.Live, "schedules") {
		if periodic, err = r.app.periodicJobs(next.Schedules); err != nil {
			return ConfigChanges{}, err
		}
	}
	var others []*notify.Dispatcher
	receivers := changed(changes.Live, "pagerduty") || changed(changes.Live, "webhook")
	if receivers {
		if others, err = r.app.otherDispatchers(next); err != nil {
			return ConfigChanges{}, fmt.Errorf("receivers: %w", err)
		}
	}
	if changed(changes.Live, "routes") {
		routes := routesOf(next)
		for _, route := range routes {
			// The receivers after this reload are next's: theirs are live.
			if !receiverOn(next, route.Receiver) {
				return ConfigChanges{}, fmt.Errorf("routes: receiver %q is not running: turn it on in the same file", route.Receiver)
			}
		}
		was := r.app.liveRoutes.Swap(&routes)
		if err := r.app.WriteRoutes(ctx); err != nil {
			r.app.liveRoutes.Store(was)
			return ConfigChanges{}, fmt.Errorf("routes: write: %w", err)
		}
	}
	if periodic != nil {
		if err := r.daemon.ReplacePeriodic(periodic); err != nil {
			return ConfigChanges{}, fmt.Errorf("schedules: %w", err)
		}
		r.app.liveSweep.Store(&next.Schedules.Sweep)
	}
	if receivers {
		r.daemon.notify.SetOthers(others...)
	}
	if changed(changes.Live, "log.level") {
		r.level.Set(next.Log.SlogLevel())
	}
	if changed(changes.Live, "review") {
		r.app.livePolicies().Set(Policy(next), EscalationPolicy(next))
	}
	for name, p := range r.app.Providers {
		block, ok := next.Providers[name]
		if !ok || slices.Contains(changes.Restart, "providers."+name) || slices.Contains(changes.Restart, "providers."+name+".kind") {
			continue // another provider now: its pacing waits for the restart too
		}
		lim, was := limitsOf(block), p.Limits()
		if slices.Contains(changes.Restart, "providers."+name+".outage_after") {
			lim.OutageAfter = was.OutageAfter // its running value is kept
		}
		if lim == was {
			continue
		}
		p.SetLimits(lim)
		if tracker := r.app.trackers[name]; tracker != nil {
			tracker.SetOutageAfter(lim.OutageAfter, probeLease(lim))
		}
	}
	r.applied = next
	return changes, nil
}

// changed reports whether keys hold key or a key under it.
func changed(keys []string, key string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return k == key || strings.HasPrefix(k, key+".") })
}

// receiverOn reports whether cfg runs receiver.
func receiverOn(cfg *config.Config, receiver string) bool {
	switch receiver {
	case "pagerduty":
		return cfg.PagerDuty.On()
	case "webhook":
		return cfg.Webhook.On()
	}
	return true // slack: on, or its rows recorded skipped
}

// ServeHTTP reloads on POST (/-/reload, as Alertmanager's): 200 with the
// keys applied and those that need a restart, or 500 with why the reload
// was refused whole.
func (r *Reloader) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	changes, err := r.Reload(req.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "reloaded\napplied: %s\nneeds restart: %s\n", strings.Join(changes.Live, " "), strings.Join(changes.Restart, " "))
}
