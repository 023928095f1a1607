package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

func TestEscalateOnceCommand(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, daemonConfig+`
[[review.escalation]]
owner = "U0SECOND01"
priority = "high"
window = "2h"
`)
	seed(t, dbURL, "many-e1", "nf-e2")
	environ := map[string]string{config.EnvDatabaseURL: dbURL}
	if r := runCLI(t, environ, "sweep", "--once", "--config", cfgFile); r.code != exitOK {
		t.Fatalf("sweep --once: code %d\n%s", r.code, r.stderr)
	}

	r := runCLI(t, environ, "escalate", "--once", "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "examined 0, escalated 0") {
		t.Errorf("nothing due: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	pool := dbtest.Pool(t, dbURL)
	if err := execAsSweeper(context.Background(), pool, `UPDATE sweeper.tickets SET deadline = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, environ, "escalate", "--once", "--json", "--config", cfgFile)
	if r.code != exitOK {
		t.Fatalf("escalate --once: code %d\n%s", r.code, r.stderr)
	}
	var sum struct {
		Examined           int            `json:"examined"`
		Escalated          map[string]int `json:"escalated"`
		Repeats            int            `json:"repeats"`
		Exhausted          int            `json:"exhausted"`
		Held               int            `json:"held"`
		ResolvedByRelookup int            `json:"resolved_by_relookup"`
		AlreadyHandled     int            `json:"already_handled"`
		Errors             int            `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary JSON: %v\n%s", err, r.stdout)
	}
	if sum.Examined != 2 || sum.Escalated["1"] != 2 || sum.Errors != 0 {
		t.Errorf("summary = %+v", sum)
	}
	r = runCLI(t, environ, "tickets", "list", "--config", cfgFile)
	if strings.Count(r.stdout, "U0SECOND01") != 2 {
		t.Errorf("tickets after escalation:\n%s", r.stdout)
	}
	if r := runCLI(t, environ, "escalate", "--config", cfgFile); r.code != exitUsage {
		t.Errorf("escalate without --once: code %d", r.code)
	}
}
