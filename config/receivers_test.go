package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
)

// exampleKey is a commented key or table of the example.
var exampleKey = regexp.MustCompile(`^# (\[|[a-z_]+ = )`)

// TestReceiversAndRoutes: the example's receivers block, uncommented,
// loads; a route to a receiver that is off, an unknown receiver or reason,
// a level past the escalation's, and a secret set twice are each refused
// with their key.
func TestReceiversAndRoutes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	block := text[strings.Index(text, "# [pagerduty]"):strings.Index(text, "[http]\n")]
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if exampleKey.MatchString(l) {
			lines = append(lines, strings.TrimPrefix(l, "# "))
		}
	}
	example := minimal + `
[[review.escalation]]
owner = "U0LEAD01"
priority = "high"
window = "1h"

[[review.escalation]]
owner = "U0HEAD01"
priority = "urgent"
window = "1h"
` + strings.Join(lines, "\n") + "\n"
	vars := map[string]string{"SWEEPER_PAGERDUTY_ROUTING_KEY": "k", "SWEEPER_WEBHOOK_SECRET": "s"}
	cfg, err := config.Parse(example, kinds, env(vars))
	if err != nil {
		t.Fatalf("the example's receivers block: %v\n%s", err, example)
	}
	if len(cfg.Routes) != 3 || cfg.Routes[0] != (config.RouteEntry{Receiver: "pagerduty", Workflow: "payments", Level: 2}) ||
		!cfg.PagerDuty.On() || !cfg.Webhook.On() || cfg.Webhook.GiveUpAfter.Duration.Hours() != 24 {
		t.Fatalf("parsed %+v, %+v, %+v", cfg.Routes, cfg.PagerDuty, cfg.Webhook)
	}
	if got := cfg.EffectiveRoutes(); len(got) != 3 {
		t.Errorf("effective routes %+v: a route names slack, so none is added", got)
	}
	plain, err := config.Parse(minimal, kinds, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.EffectiveRoutes(); len(got) != 1 || got[0] != (config.RouteEntry{Receiver: "slack"}) {
		t.Errorf("without routes: %+v, want Slack for every ticket", got)
	}

	for _, c := range []struct{ desc, text, want string }{
		{"pagerduty off", "[[routes]]\nreceiver = \"pagerduty\"\n", "routes[0].receiver: pagerduty: set pagerduty.routing_key_env too"},
		{"webhook off", "[[routes]]\nreceiver = \"webhook\"\n", "routes[0].receiver: webhook: set webhook.url too"},
		{"unknown receiver", "[[routes]]\nreceiver = \"email\"\n", "routes[0].receiver: must be one of slack, pagerduty, webhook"},
		{"unknown reason", "[[routes]]\nreceiver = \"slack\"\nreason = \"late\"\n", "routes[0].reason: must be a ticket reason"},
		{"level too high", "[[routes]]\nreceiver = \"slack\"\nlevel = 1\n", "routes[0].level: must be between 0"},
		{"webhook without secret", "[webhook]\nurl = \"https://hooks.example.com/x\"\n", "webhook.secret_env: required"},
		{"webhook over http", "[webhook]\nurl = \"http://hooks.example.com/x\"\nsecret_env = \"S\"\n", "webhook.url: must be an https URL"},
		{"secret set twice", "[pagerduty]\nrouting_key_env = \"PK\"\n", "pagerduty.routing_key_env: both PK and PK_FILE are set"},
	} {
		_, err := config.Parse(minimal+c.text, kinds, env(map[string]string{"S": "x", "PK": "k", "PK_FILE": "/dev/null"}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.desc, err, c.want)
		}
	}
}
