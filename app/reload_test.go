package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/proof"
)

// reloadBase is the running configuration each case of
// TestDiffConfig edits.
const reloadBase = `
[database]
url = "postgres://db.example/sweeper"

[schedules]
sweep = "@every 1m"

[review]
default_owner = "U0DEFAULT1"
[review.owners.workflows]
billing = "U0BILLING1"

[log]
level = "info"

[http]
listen = "127.0.0.1:8080"

[webhook]
url = "https://hooks.example/sweeper"
secret_env = "WEBHOOK_SECRET"

[[routes]]
receiver = "slack"

[providers.sim]
kind = "sim"
simulated = true
rate_limit = 10
[[providers.sim.rules]]
match = "found-*"
outcome = "found"
`

func TestDiffConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		from, to string // replaced in reloadBase
		want     app.ConfigChanges
	}{
		{desc: "nothing changed"},
		{desc: "log level", from: `level = "info"`, to: `level = "debug"`,
			want: app.ConfigChanges{Live: []string{"log.level"}}},
		{desc: "log format needs a restart", from: `level = "info"`, to: "level = \"info\"\nformat = \"text\"",
			want: app.ConfigChanges{Restart: []string{"log.format"}}},
		{desc: "an owner changed", from: `billing = "U0BILLING1"`, to: `billing = "U0BILLING2"`,
			want: app.ConfigChanges{Live: []string{"review.owners.workflows.billing"}}},
		{desc: "an owner added", from: `billing = "U0BILLING1"`, to: "billing = \"U0BILLING1\"\nshop = \"U0SHOP1\"",
			want: app.ConfigChanges{Live: []string{"review.owners.workflows.shop"}}},
		{desc: "an owner removed", from: `billing = "U0BILLING1"`, to: ``,
			want: app.ConfigChanges{Live: []string{"review.owners.workflows.billing"}}},
		{desc: "escalation levels", from: `default_owner = "U0DEFAULT1"`,
			to:   "default_owner = \"U0DEFAULT1\"\n[[review.escalation]]\nowner = \"U0LEAD1\"\npriority = \"high\"\nwindow = \"1h\"\n[review.owners.providers]",
			want: app.ConfigChanges{Live: []string{"review.escalation", "review.repeat_every"}}},
		{desc: "schedule", from: `sweep = "@every 1m"`, to: `sweep = "@every 2m"`,
			want: app.ConfigChanges{Live: []string{"schedules.sweep"}}},
		{desc: "routes", from: "[[routes]]\nreceiver = \"slack\"", to: "[[routes]]\nreceiver = \"webhook\"",
			want: app.ConfigChanges{Live: []string{"routes"}}},
		{desc: "a provider's rate limit", from: `rate_limit = 10`, to: `rate_limit = 2.5`,
			want: app.ConfigChanges{Live: []string{"providers.sim.rate_limit"}}},
		{desc: "a provider's pacing, every number at once", from: `rate_limit = 10`,
			to: "rate_limit = 10\nstale_after = \"20m\"\nlookup_timeout = \"5s\"\nlookup_budget = \"30m\"\nconcurrency = 8\n" +
				"settle_window = \"1m\"\nin_flight_for = \"2h\"\nmax_outage = \"30m\"\noutage_after = 3",
			want: app.ConfigChanges{Live: []string{"providers.sim.concurrency", "providers.sim.in_flight_for", "providers.sim.lookup_budget",
				"providers.sim.lookup_timeout", "providers.sim.max_outage", "providers.sim.outage_after", "providers.sim.settle_window",
				"providers.sim.stale_after"}}},
		{desc: "a provider's lookup budget", from: `rate_limit = 10`, to: "rate_limit = 10\nlookup_budget = \"1m\"",
			want: app.ConfigChanges{Live: []string{"providers.sim.lookup_budget"}}},
		{desc: "outage_after turned off needs a restart: the provider's health is kept from the start", from: `rate_limit = 10`,
			to: "rate_limit = 10\noutage_after = 0", want: app.ConfigChanges{Restart: []string{"providers.sim.outage_after"}}},
		{desc: "database url", from: `url = "postgres://db.example/sweeper"`, to: `url = "postgres://other.example/sweeper"`,
			want: app.ConfigChanges{Restart: []string{"database.url"}}},
		{desc: "listener", from: `listen = "127.0.0.1:8080"`, to: `listen = "127.0.0.1:8081"`,
			want: app.ConfigChanges{Restart: []string{"http.listen"}}},
		{desc: "a provider's kind settings", from: "outcome = \"found\"", to: "outcome = \"many\"",
			want: app.ConfigChanges{Restart: []string{"providers.sim.rules"}}},
		{desc: "the webhook's url", from: `url = "https://hooks.example/sweeper"`, to: `url = "https://hooks.example/other"`,
			want: app.ConfigChanges{Live: []string{"webhook.url"}}},
		{desc: "the webhook's secret, timeout and give-up", from: `secret_env = "WEBHOOK_SECRET"`,
			to:   "secret_env = \"WEBHOOK_SECRET_2\"\ntimeout = \"3s\"\ngive_up_after = \"1h\"",
			want: app.ConfigChanges{Live: []string{"webhook.give_up_after", "webhook.secret_env", "webhook.timeout"}}},
		{desc: "pagerduty turned on", from: "[webhook]", to: "[pagerduty]\nrouting_key_env = \"PD_KEY\"\ngive_up_after = \"2h\"\n[webhook]",
			want: app.ConfigChanges{Live: []string{"pagerduty.give_up_after", "pagerduty.routing_key_env"}}},
		{desc: "slack needs a restart", from: "[webhook]", to: "[slack]\nchannel = \"C0ALERTS1\"\n[webhook]",
			want: app.ConfigChanges{Restart: []string{"slack.channel"}}},
		{desc: "a provider added is one key", from: "[providers.sim]",
			to:   "[providers.sim2]\nkind = \"sim\"\nsimulated = true\n[providers.sim]",
			want: app.ConfigChanges{Restart: []string{"providers.sim2"}}},
		{desc: "live and restart together, each sorted", from: `level = "info"`,
			to:   "level = \"debug\"\nformat = \"json\"",
			want: app.ConfigChanges{Live: []string{"log.level"}, Restart: []string{"log.format"}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			running := parseValues(t, reloadBase)
			text := reloadBase
			if tc.from != "" {
				if !strings.Contains(text, tc.from) {
					t.Fatalf("the base lacks %q", tc.from)
				}
				text = strings.Replace(text, tc.from, tc.to, 1)
			}
			next := parseValues(t, text)
			got := app.DiffConfig(running, next)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DiffConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func parseValues(t *testing.T, text string) map[string]string {
	t.Helper()
	cfg, err := config.ParseWith(text, kinds, func(string) string { return "" }, config.Options{NoSlack: true})
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	v, err := cfg.Values()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReloadWhileSettling reloads again and again — owners, the sweep's
// schedule, the provider's rate limit — while a River client settles a
// backlog (under the race detector): every operation gets exactly one
// ticket, no job is left unfinished, and the work after the last reload
// runs under it.
func TestReloadWhileSettling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	text := func(owner, sweep, rate string) string {
		s := strings.Replace(baseConfig, `billing = "U0BILLING1"`, fmt.Sprintf("billing = %q", owner), 1)
		s = strings.Replace(s, "rate_limit = 10000.0", "rate_limit = "+rate, 1)
		return s + fmt.Sprintf("\n[schedules]\nsweep = %q\n", sweep)
	}
	b := setup(t, text("U0BILLING1", "@every 1s", "10000.0"), nil)
	var next atomic.Pointer[string]
	load := func() (*config.Config, error) {
		return config.Parse(*next.Load(), kinds, func(string) string { return "" })
	}
	daemon, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	level := new(slog.LevelVar)
	reloader, err := b.sweeper.NewReloader(app.ReloadOptions{Daemon: daemon, Load: load, Level: level, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 100 {
		keys = append(keys, fmt.Sprintf("nf-r-%03d", i))
		b.claim(t, keys[i], "sim", time.Hour)
	}
	if err := daemon.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := daemon.Stop(ctx); err != nil {
			t.Errorf("stop river client: %v", err)
		}
	})
	configs := []string{text("U0BILLING2", "@every 2s", "5000.0"), text("U0BILLING1", "@every 1s", "10000.0")}
	for i := range 20 {
		next.Store(&configs[i%2])
		changes, err := reloader.Reload(ctx)
		if err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		want := []string{"providers.sim.rate_limit", "review.owners.workflows.billing", "schedules.sweep"}
		if diff := cmp.Diff(app.ConfigChanges{Live: want}, changes); diff != "" {
			t.Fatalf("reload %d (-want +got):\n%s", i, diff)
		}
		// The audit's patience follows the sweep's schedule as reloaded.
		if got, want := b.sweeper.Auditor().Behind(), []time.Duration{4 * time.Second, 2 * time.Second}[i%2]; got != want {
			t.Fatalf("reload %d: the audit waits for lookups behind by %s, want %s", i, got, want)
		}
	}
	b.waitSettled(t, keys, 30*time.Second)
	if n := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE op_key LIKE 'nf-r-%' AND owner IN ('U0BILLING1', 'U0BILLING2')`); n != len(keys) {
		t.Fatalf("%d tickets for the %d operations; want one each", n, len(keys))
	}

	last := text("U0BILLING3", "@every 1s", "250.0")
	next.Store(&last)
	if _, err := reloader.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.sweeper.Providers["sim"].RateLimit(); got != 250 {
		t.Errorf("rate limit %g after the reload, want 250", got)
	}
	b.claim(t, "nf-after", "sim", time.Hour)
	b.waitSettled(t, []string{"nf-after"}, 30*time.Second)
	if n := b.count(t, `SELECT count(*) FROM sweeper.tickets WHERE op_key = 'nf-after' AND owner = 'U0BILLING3'`); n != 1 {
		t.Errorf("the operation settled after the last reload has %d tickets owned by U0BILLING3, want 1", n)
	}
}

// TestReloadPacingWhileLookupsRun reloads a provider's pacing — budget,
// timeout, stale_after, concurrency, outage numbers — again and again while
// lookups of it run (under the race detector), then shortens its
// lookup_budget from an hour to a second: operations whose provider fails
// every ask, already being asked under the hour, end as lookup_failed
// tickets on their next decision, under the new budget.
func TestReloadPacingWhileLookupsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	text := func(budget, timeout, stale string, concurrency, outageAfter int) string {
		s := strings.Replace(baseConfig, `lookup_budget = "2s"`, fmt.Sprintf("lookup_budget = %q\noutage_after = %d\nmax_outage = \"%dh\"", budget, outageAfter, outageAfter-990), 1)
		s = strings.Replace(s, `lookup_timeout = "200ms"`, fmt.Sprintf("lookup_timeout = %q", timeout), 1)
		s = strings.Replace(s, `stale_after = "10m"`, fmt.Sprintf("stale_after = %q", stale), 1)
		s = strings.Replace(s, "concurrency = 100", fmt.Sprintf("concurrency = %d", concurrency), 1)
		return s + "\n[schedules]\nsweep = \"@every 1s\"\n"
	}
	b := setup(t, text("1h", "200ms", "10m", 100, 1000), nil)
	var next atomic.Pointer[string]
	load := func() (*config.Config, error) {
		return config.Parse(*next.Load(), kinds, func(string) string { return "" })
	}
	daemon, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reloader, err := b.sweeper.NewReloader(app.ReloadOptions{Daemon: daemon, Load: load, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	b.sweeper.TrackHealth()
	var failing, found []string
	for i := range 20 {
		failing = append(failing, fmt.Sprintf("error-p-%03d", i))
		b.claim(t, failing[i], "sim", time.Hour)
	}
	for i := range 50 {
		found = append(found, fmt.Sprintf("found-p-%03d", i))
		b.claim(t, found[i], "sim", time.Hour)
	}
	if err := daemon.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := daemon.Stop(ctx); err != nil {
			t.Errorf("stop river client: %v", err)
		}
	})
	sim := b.sweeper.Providers["sim"]
	for deadline := time.Now().Add(10 * time.Second); sim.Requests() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the provider was not asked within 10s")
		}
	}
	configs := []string{text("2h", "300ms", "20m", 50, 999), text("1h", "200ms", "10m", 100, 1000)}
	want := []string{"providers.sim.concurrency", "providers.sim.lookup_budget", "providers.sim.lookup_timeout",
		"providers.sim.max_outage", "providers.sim.outage_after", "providers.sim.stale_after"}
	for i := range 20 {
		next.Store(&configs[i%2])
		changes, err := reloader.Reload(ctx)
		if err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		if diff := cmp.Diff(app.ConfigChanges{Live: want}, changes); diff != "" {
			t.Fatalf("reload %d (-want +got):\n%s", i, diff)
		}
	}
	if got := sim.Limits().LookupBudget; got != time.Hour {
		t.Fatalf("lookup budget %s after the reloads, want 1h", got)
	}
	for deadline := time.Now().Add(15 * time.Second); b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:op_key} LIKE 'found-p-%' AND {c:status} = {w:done}`)) < len(found); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the operations the provider finds were not settled within 15s")
		}
	}
	if n := b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:op_key} LIKE 'error-p-%' AND {c:status} = {w:pending}`)); n != len(failing) {
		t.Fatalf("%d of the %d failing operations pending under a budget of an hour, want all", n, len(failing))
	}

	short := text("1s", "200ms", "10m", 100, 1000)
	next.Store(&short)
	if _, err := reloader.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	b.waitSettled(t, failing, 15*time.Second)
	for _, key := range failing {
		tk, ev := b.ticketOf(t, key)
		if tk.Reason != proof.ReasonLookupFailed || len(ev.Errors) == 0 {
			t.Fatalf("%s: ticket %s with %d errors, want lookup_failed with its attempts", key, tk.Reason, len(ev.Errors))
		}
		if !strings.Contains(ev.Detail, "within lookup_budget 1s") {
			t.Errorf("%s: decided %q, want the lookup ended within lookup_budget 1s", key, ev.Detail)
		}
	}
}

// TestReloadWebhookURL: a reload that moves the webhook to another URL
// sends the next ticket event there, and none to the old one, while the
// daemon runs; a reload whose webhook cannot be built (its secret unset)
// is refused whole and the webhook keeps its URL.
func TestReloadWebhookURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hook := func() (*httptest.Server, chan string) {
		got := make(chan string, 10)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got <- string(body)
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)
		return srv, got
	}
	first, toFirst := hook()
	second, toSecond := hook()
	text := func(url, secretEnv string) string {
		return baseConfig + fmt.Sprintf("\n[schedules]\nsweep = \"@every 1s\"\nnotify = \"@every 1s\"\n"+
			"[webhook]\nurl = %q\nsecret_env = %q\n[[routes]]\nreceiver = \"webhook\"\n", url, secretEnv)
	}
	getenv := func(name string) string {
		if name == "HOOK_SECRET" {
			return "s3cret"
		}
		return ""
	}
	b := setup(t, baseConfig, nil)
	// The harness reads no secret: the webhook's is set here.
	cfg, err := config.Parse(text(first.URL, "HOOK_SECRET"), kinds, getenv)
	if err != nil {
		t.Fatal(err)
	}
	b.sweeper.Config, b.sweeper.Getenv = cfg, getenv
	if err := b.sweeper.WriteRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	var next atomic.Pointer[string]
	load := func() (*config.Config, error) { return config.Parse(*next.Load(), kinds, getenv) }
	daemon, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reloader, err := b.sweeper.NewReloader(app.ReloadOptions{Daemon: daemon, Load: load, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := daemon.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := daemon.Stop(ctx); err != nil {
			t.Errorf("stop river client: %v", err)
		}
	})
	receive := func(at chan string, where, key string) {
		t.Helper()
		select {
		case body := <-at:
			if !strings.Contains(body, key) {
				t.Fatalf("the %s URL got an event without %s: %s", where, key, body)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("no event for %s at the %s URL within 15s", key, where)
		}
	}

	b.claim(t, "many-w1", "sim", time.Hour)
	receive(toFirst, "first", "many-w1")

	unset := text(second.URL, "HOOK_SECRET_UNSET")
	next.Store(&unset)
	if _, err := reloader.Reload(ctx); !errors.Is(err, app.ErrReloadRefused) {
		t.Fatalf("reload with the webhook's secret unset: %v, want it refused", err)
	}
	b.claim(t, "many-w2", "sim", time.Hour)
	receive(toFirst, "first", "many-w2")

	moved := text(second.URL, "HOOK_SECRET")
	next.Store(&moved)
	changes, err := reloader.Reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(app.ConfigChanges{Live: []string{"webhook.url"}}, changes); diff != "" {
		t.Fatalf("reload (-want +got):\n%s", diff)
	}
	b.claim(t, "many-w3", "sim", time.Hour)
	receive(toSecond, "second", "many-w3")
	select {
	case body := <-toFirst:
		t.Errorf("the old URL got an event after the reload: %s", body)
	default:
	}
}
