package app_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/app"
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
		{desc: "database url", from: `url = "postgres://db.example/sweeper"`, to: `url = "postgres://other.example/sweeper"`,
			want: app.ConfigChanges{Restart: []string{"database.url"}}},
		{desc: "listener", from: `listen = "127.0.0.1:8080"`, to: `listen = "127.0.0.1:8081"`,
			want: app.ConfigChanges{Restart: []string{"http.listen"}}},
		{desc: "a provider's kind settings", from: "outcome = \"found\"", to: "outcome = \"many\"",
			want: app.ConfigChanges{Restart: []string{"providers.sim.rules"}}},
		{desc: "a receiver", from: `url = "https://hooks.example/sweeper"`, to: `url = "https://hooks.example/other"`,
			want: app.ConfigChanges{Restart: []string{"webhook.url"}}},
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
