package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestAuditReport: `sweeper audit report` prints the records a provider
// lists under an op_key no ledger row has, as a table and as JSON.
func TestAuditReport(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, "simulated = true",
		"simulated = true\nlisted = [\"found-known\", \"orphan-1\"]", 1))
	seed(t, dbURL, "found-known")
	environ := map[string]string{config.EnvDatabaseURL: dbURL}

	r := runCLI(t, environ, "audit", "report", "--since", "24h", "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "orphan-1") || strings.Contains(r.stdout, "found-known") {
		t.Fatalf("audit report: code %d, want orphan-1 alone\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, environ, "audit", "report", "--json", "--config", cfgFile)
	var reports []struct {
		Provider string `json:"provider"`
		Listed   int    `json:"listed"`
		Orphans  []struct {
			OpKey string `json:"op_key"`
		} `json:"orphans"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reports); err != nil || len(reports) != 1 || reports[0].Listed != 2 ||
		len(reports[0].Orphans) != 1 || reports[0].Orphans[0].OpKey != "orphan-1" {
		t.Fatalf("audit report --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if r := runCLI(t, environ, "audit", "report", "--provider", "nope", "--config", cfgFile); r.code != exitUsage {
		t.Errorf("an unknown provider: code %d, want a usage error", r.code)
	}
}
