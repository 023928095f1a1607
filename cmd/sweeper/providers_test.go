package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestProvidersCommand: `sweeper providers` shows each configured
// provider's health as every replica shares it — down, since when, the
// next probe and the error that took it down — and what waits on it.
func TestProvidersCommand(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, daemonConfig)
	seed(t, dbURL, "found-p1", "found-p2")
	environ := map[string]string{config.EnvDatabaseURL: dbURL}

	r := runCLI(t, environ, "providers", "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "sim") || !strings.Contains(r.stdout, " up; 2 pending") {
		t.Fatalf("providers: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if header := strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0]); len(header) == 0 || header[0] != "PROVIDER" {
		t.Errorf("providers: the first line is no column header:\n%s", r.stdout)
	}
	r = runCLI(t, environ, "providers", "--json", "--config", cfgFile)
	var up []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &up); err != nil || len(up) != 1 || up[0]["down_for_seconds"] != float64(0) {
		t.Errorf("providers --json while up: %v, want down_for_seconds 0\n%s", err, r.stdout)
	}

	if _, err := dbtest.Pool(t, dbURL).Exec(context.Background(), `INSERT INTO sweeper.provider_health
		(provider, state, since, probe_at, last_error) VALUES ('sim', 'down', now() - interval '2 minutes', now() + interval '20 seconds', 'sim: HTTP 503')`); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, environ, "providers", "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "DOWN since") || !strings.Contains(r.stdout, "last error: sim: HTTP 503") {
		t.Errorf("providers while down: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, environ, "providers", "--json", "--config", cfgFile)
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("providers --json: %v\n%s", err, r.stdout)
	}
	if list[0]["provider"] != "sim" || list[0]["up"] != false || list[0]["pending"] != float64(2) || list[0]["matching"] != "op_key" {
		t.Errorf("providers --json = %v", list[0])
	}
	// The current outage's length, beside the earlier outages' total.
	if d, _ := list[0]["down_for_seconds"].(float64); d < 119 || d > 600 || list[0]["down_seconds"] != float64(0) {
		t.Errorf("providers --json while down 2 minutes: down_for_seconds %v, down_seconds %v; want about 120 and 0",
			list[0]["down_for_seconds"], list[0]["down_seconds"])
	}
}
