package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
)

// TestCheckConfigPrintsAdapterDefaults: a provider block that leaves out a
// key whose zero stands for a default is printed with the value that
// applies, from its default; a key the file sets is printed as set, from
// the file.
func TestCheckConfigPrintsAdapterDefaults(t *testing.T) {
	t.Parallel()
	const text = `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"

[providers.sim]
kind = "sim"
simulated = true

[providers.sim_set]
kind = "sim"
simulated = true
max_batch = 7

[providers.orders]
kind = "http"
url = "https://orders.internal/lookup"

[providers.ledger]
kind = "postgres"
dsn_env = "LEDGER_DSN"
query = "SELECT id, created_at, payload_hash, op_key FROM records WHERE op_key = ANY(@op_keys)"
`
	r := runCLI(t, map[string]string{"LEDGER_DSN": "postgres://127.0.0.1/ledger"}, "check-config", "--config", writeConfig(t, text))
	if r.code != exitOK {
		t.Fatalf("check-config: code %d\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct{ block, key, value, source string }{
		{"sim", "max_batch", "100", config.SourceDefault},
		{"sim_set", "max_batch", "7", config.SourceFile},
		{"orders", "max_batch", "1", config.SourceDefault},
		{"orders", "search_by", `"op_key"`, config.SourceDefault},
		{"ledger", "max_batch", "100", config.SourceDefault},
		{"ledger", "in_flight_for", `"1h"`, config.SourceDefault},
	} {
		if got := blockValue(r.stdout, tc.block, tc.key); got != tc.value {
			t.Errorf("providers.%s.%s = %s, want %s", tc.block, tc.key, got, tc.value)
		}
		source := regexp.MustCompile(`(?m)^#\s+providers\.` + regexp.QuoteMeta(tc.block+"."+tc.key) + `\s+(.*)$`)
		if m := source.FindStringSubmatch(r.stdout); m == nil || m[1] != tc.source {
			t.Errorf("providers.%s.%s: source %q, want %q", tc.block, tc.key, m, tc.source)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", r.stdout)
	}
}

// blockValue returns the value printed for key in the TOML table
// [providers.block] of out, as written.
func blockValue(out, block, key string) string {
	in := false
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			in = line == "[providers."+block+"]"
			continue
		}
		if k, v, ok := strings.Cut(line, " = "); in && ok && k == key {
			return v
		}
	}
	return ""
}

// TestCheckConfigPrintsRoutes: the routes in effect are printed in order,
// with the implicit Slack route when Slack is on and no route names it.
func TestCheckConfigPrintsRoutes(t *testing.T) {
	t.Parallel()
	const text = `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"

[[review.escalation]]
owner = "U0LEAD01"
priority = "high"
window = "1h"

[[review.escalation]]
owner = "U0HEAD01"
priority = "urgent"
window = "1h"

[slack]
channel = "C0ALERTS1"

[pagerduty]
routing_key_env = "PD_KEY"

[[routes]]
receiver = "pagerduty"
workflow = "payments"
level = 2
`
	r := runCLI(t, map[string]string{"PD_KEY": "k", config.EnvSlackToken: "xoxb-1", config.EnvSlackSigning: "s"},
		"check-config", "--config", writeConfig(t, text))
	if r.code != exitOK {
		t.Fatalf("check-config: code %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`#   1. workflow = "payments", level >= 2 -> pagerduty`,
		`#   2. every ticket -> slack (implicit: no route names slack)`,
		`# PD_KEY = set (pagerduty.routing_key_env)`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check-config does not print %q:\n%s", want, r.stdout)
		}
	}
}

// TestCheckConfigRefusesAMisspeltVariable: a SWEEPER_ variable in the
// process's environment that sets no key fails check-config (exit 2) by
// name, with the key it was probably meant for; spelt right, it passes.
func TestCheckConfigRefusesAMisspeltVariable(t *testing.T) {
	t.Parallel()
	file := writeConfig(t, `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"

[providers.orders_api]
kind = "http"
url = "https://orders.internal/lookup"
`)
	check := func(environ ...string) result {
		vars := map[string]string{}
		for _, kv := range environ {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		var stdout, stderr strings.Builder
		code := runEnviron(t.Context(), []string{"check-config", "--config", file}, strings.NewReader(""), &stdout, &stderr,
			func(k string) string { return vars[k] }, environ)
		return result{code, stdout.String(), stderr.String()}
	}
	r := check("SWEEPER_SWEP_BATCH_SIZE=250", "SWEEPER_PROVIDERS_ORDRES_API_URL=https://orders.internal/v2")
	if r.code != exitUsage {
		t.Fatalf("check-config with misspelt variables: code %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	for _, want := range []string{
		"SWEEPER_SWEP_BATCH_SIZE: environment variable names no configuration key; did you mean SWEEPER_SWEEP_BATCH_SIZE (sweep.batch_size)?",
		"SWEEPER_PROVIDERS_ORDRES_API_URL: environment variable names no configuration key",
		"did you mean SWEEPER_PROVIDERS_ORDERS_API_URL (providers.orders_api.url)?",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r := check("SWEEPER_SWEEP_BATCH_SIZE=250", "SWEEPER_PROVIDERS_ORDERS_API_URL=https://orders.internal/v2"); r.code != exitOK {
		t.Errorf("check-config with the variables spelt right: code %d\n%s", r.code, r.stderr)
	}
}

// TestCheckConfigPrintsOnlyWhatIsInEffect: with Slack off (no
// slack.channel) no implicit route to Slack is printed, and sweeper's own
// ledger table is not printed as an empty [ledger] table key.
func TestCheckConfigPrintsOnlyWhatIsInEffect(t *testing.T) {
	t.Parallel()
	const text = `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"
`
	r := runCLI(t, nil, "check-config", "--config", writeConfig(t, text))
	if r.code != exitOK {
		t.Fatalf("check-config: code %d\n%s", r.code, r.stderr)
	}
	for _, bad := range []string{"-> slack", `table = ""`} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("check-config prints %q:\n%s", bad, r.stdout)
		}
	}
	if want := "#   none: Slack is off (no slack.channel) and no route names a receiver"; !strings.Contains(r.stdout, want) {
		t.Errorf("check-config does not print %q:\n%s", want, r.stdout)
	}
}
