package main

import (
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestCommandsWithoutLookupsNeedNoProviderSecrets: with a provider whose
// token variable is unset, the commands that never look anything up work,
// and those that do refuse to start with the error naming the variable.
func TestCommandsWithoutLookupsNeedNoProviderSecrets(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, daemonConfig+`
[providers.mailer]
kind = "http"
url = "https://n8n.example.com/webhook/sweeper-lookup"
token_env = "MAILER_LOOKUP_TOKEN"
`)
	seed(t, dbURL, "nf-s1")
	environ := map[string]string{config.EnvDatabaseURL: dbURL}

	for _, args := range [][]string{
		{"tickets", "list"},
		{"tickets", "list", "--state", "all", "--json"},
		{"outbox", "list"},
		{"migrate", "--status"},
		{"migrate"},
	} {
		r := runCLI(t, environ, append(args, "--config", cfgFile)...)
		if r.code != exitOK {
			t.Errorf("%v with MAILER_LOOKUP_TOKEN unset: code %d\n%s", args, r.code, r.stderr)
		}
	}
	// show, resolve and ack reach the database: an unknown ticket is
	// exit 1 (not found), not exit 2 (configuration).
	for _, args := range [][]string{
		{"tickets", "show", "999999"},
		{"tickets", "resolve", "999999", "--outcome", "not_sent", "--by", "ops"},
		{"tickets", "ack", "999999", "--by", "ops"},
	} {
		r := runCLI(t, environ, append(args, "--config", cfgFile)...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "no ticket 999999") {
			t.Errorf("%v with MAILER_LOOKUP_TOKEN unset: code %d\n%s", args, r.code, r.stderr)
		}
	}

	const want = "providers.mailer.token_env: environment variable MAILER_LOOKUP_TOKEN is not set (nor MAILER_LOOKUP_TOKEN_FILE)"
	for _, args := range [][]string{
		{"sweep", "--once"},
		{"escalate", "--once"},
		{"check-config"},
	} {
		r := runCLI(t, environ, append(args, "--config", cfgFile)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("%v with MAILER_LOOKUP_TOKEN unset: code %d, want %d and %q\n%s", args, r.code, exitUsage, want, r.stderr)
		}
	}
	// Set, the sweep runs (the lookup itself fails: nothing listens there,
	// and the row is not stale for mailer anyway).
	environ["MAILER_LOOKUP_TOKEN"] = "t0ken"
	if r := runCLI(t, environ, "sweep", "--once", "--dry-run", "--config", cfgFile); strings.Contains(r.stderr, "MAILER_LOOKUP_TOKEN") {
		t.Errorf("sweep with the token set: code %d\n%s", r.code, r.stderr)
	}
}
