package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

const daemonConfig = `
[database]
url = "postgres://unused"
# Tests share one server: a small pool per daemon keeps them under
# its connection limit.
max_conns = 8

[schedules]
sweep = "@every 1s"

[review]
default_owner = "U0DEFAULT1"

[http]
listen = "127.0.0.1:0"
metrics_refresh = "1s"

[providers.sim]
kind = "sim"
simulated = true
stale_after = "1m"
lookup_timeout = "200ms"
lookup_budget = "1s"
[[providers.sim.rules]]
match = "found-*"
outcome = "found"
[[providers.sim.rules]]
match = "many-*"
outcome = "many"
[[providers.sim.rules]]
match = "mismatch-*"
outcome = "mismatch"
`

// seed claims operations and ages them past stale_after.
func seed(t *testing.T, dbURL string, keys ...string) {
	t.Helper()
	seedIn(t, ledger.Native(), dbURL, keys...)
}

// seedIn is seed on the ledger table lt.
func seedIn(t *testing.T, lt *ledger.Table, dbURL string, keys ...string) {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbURL)
	store := lt.Store(pool)
	for _, k := range keys {
		if _, err := store.Claim(ctx, ledger.Attempt{OpKey: k, Workflow: "billing", Provider: "sim", Action: "send_email",
			Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"n":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, lt.SQL(`UPDATE {T} SET {c:first_attempt_at} = now() - interval '2 hours'
		WHERE {c:op_key} = ANY($1)`), keys); err != nil {
		t.Fatal(err)
	}
}

// execAsSweeper runs sql in a transaction that declares sweeper the writer:
// a test that moves tickets' deadlines stands in for sweeper's escalation
// policy, and the database lets no one else change them.
func execAsSweeper(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sql, args...)
		return err
	})
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sweeper.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestDaemonSettlesAndStopsOnSIGTERM starts `sweeper run` as a real process
// with a one-second schedule, waits until inserted stale operations settle,
// sends SIGTERM, and checks a clean exit with no job left running.
func TestDaemonSettlesAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	// A port of its own, so the health endpoints can be asked.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q", listen), 1))
	pool := dbtest.Pool(t, dbURL)

	d := startDaemon(t, bin, cfgFile, dbURL)

	// Operations arrive while the daemon runs, after its start-up pass: the
	// schedule must find them.
	waitFor(t, d, time.Minute, "the start-up sweep done", func() bool {
		return queryCount(t, pool, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'sweep' AND state = 'completed'`) > 0
	})
	keys := []string{"found-d1", "found-d2", "many-d3", "nf-d4"}
	seed(t, dbURL, keys...)

	waitFor(t, d, time.Minute, "every operation settled", func() bool {
		return queryCount(t, pool, `SELECT count(*) FROM ledger.operations WHERE status = 'pending'`) == 0
	})

	for _, path := range []string{"/healthz", "/readyz"} {
		if r := runCLI(t, nil, "healthcheck", "--config", cfgFile, "--path", path); r.code != exitOK {
			t.Errorf("healthcheck %s while running: code %d\n%s", path, r.code, r.stderr)
		}
	}
	// The state gauges are read every metrics_refresh: wait for a reading
	// taken after the operations settled.
	wants := []string{
		`sweeper_ledger_operations{provider="sim",status="review"} 2`,
		`sweeper_open_tickets{age="<1h",reason="not_found"} 1`,
		`sweeper_database_up 1`,
		`sweeper_river_jobs{queue="lookup",state=`,
		`sweeper_provider_up{provider="sim"} 1`,
		`sweeper_state_age_seconds `,
		`sweeper_build_info{goversion="go`,
	}
	var body string
	waitFor(t, d, 30*time.Second, "the state gauges on /metrics", func() bool {
		_, body = httpGet(t, "http://"+listen+"/metrics", nil)
		return !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(body, w) })
	})
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
		if d.err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", d.err, d.output.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("no exit within 40s of SIGTERM\n%s", d.output.String())
	}
	var running int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM sweeper.river_job WHERE state = 'running'`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running != 0 {
		t.Errorf("%d jobs left running", running)
	}
	var done, tickets int
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM ledger.operations WHERE status = 'done'),
		(SELECT count(*) FROM sweeper.tickets)`).Scan(&done, &tickets); err != nil {
		t.Fatal(err)
	}
	if done != 2 || tickets != 2 {
		t.Errorf("%d done and %d tickets, want 2 and 2", done, tickets)
	}
	if r := runCLI(t, nil, "healthcheck", "--config", cfgFile); r.code != exitFailure {
		t.Errorf("healthcheck after the daemon stopped: code %d, want %d", r.code, exitFailure)
	}
	// Not a terminal: the daemon logs JSON, one object a line; the start
	// line says which build runs.
	started := false
	for _, line := range strings.Split(strings.TrimSpace(d.output.String()), "\n") {
		var entry struct{ Msg, Version string }
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("log line is not JSON: %s", line)
			break
		}
		if entry.Msg == "sweeper running" {
			started = true
			if entry.Version == "" {
				t.Errorf("the start line has no version: %s", line)
			}
		}
	}
	if !started {
		t.Errorf("no \"sweeper running\" line:\n%s", d.output.String())
	}
	if strings.Contains(d.output.String(), "jane.doe@example.com") {
		t.Errorf("the daemon logged a raw recipient:\n%s", d.output.String())
	}
}

func TestSweepOnceAndTicketsCommands(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, daemonConfig)
	seed(t, dbURL, "found-c1", "many-c2", "nf-c3")
	environ := map[string]string{config.EnvDatabaseURL: dbURL}

	r := runCLI(t, environ, "sweep", "--once", "--dry-run", "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "dry run: nothing was written") ||
		!strings.Contains(r.stdout, "many-c2 (sim): review, multiple_matches") {
		t.Fatalf("dry run: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, environ, "sweep", "--once", "--json", "--config", cfgFile)
	if r.code != exitOK {
		t.Fatalf("sweep --once: code %d\n%s", r.code, r.stderr)
	}
	var sum struct {
		Scanned, Done int
		Tickets       map[string]int
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary JSON: %v\n%s", err, r.stdout)
	}
	if sum.Scanned != 3 || sum.Done != 1 || sum.Tickets["multiple_matches"] != 1 || sum.Tickets["not_found"] != 1 {
		t.Errorf("summary = %+v", sum)
	}
	if r := runCLI(t, environ, "sweep", "--config", cfgFile); r.code != exitUsage {
		t.Errorf("sweep without --once: code %d", r.code)
	}

	r = runCLI(t, environ, "tickets", "list", "--json", "--config", cfgFile)
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("tickets list --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	for _, field := range []string{"id", "op_key", "reason", "owner", "deadline", "priority", "escalation_level", "state", "evidence"} {
		if _, ok := list[0][field]; !ok {
			t.Errorf("ticket JSON lacks %q: %v", field, list[0])
		}
	}
	id := fmt.Sprint(list[0]["id"])
	r = runCLI(t, environ, "tickets", "show", id, "--json", "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, `"events"`) || !strings.Contains(r.stdout, `"opened"`) {
		t.Errorf("tickets show: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, environ, "tickets", "show", id, "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "owner:     U0DEFAULT1") {
		t.Errorf("tickets show (text): code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "jane.doe@example.com") {
		t.Errorf("tickets show prints a raw recipient:\n%s", r.stdout)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"tickets", "show", "999999", "--config", cfgFile}, exitFailure},
		{[]string{"tickets", "show", "abc", "--config", cfgFile}, exitUsage},
		{[]string{"tickets", "list", "--state", "closed", "--config", cfgFile}, exitUsage},
		{[]string{"tickets"}, exitUsage},
	} {
		if r := runCLI(t, environ, tc.args...); r.code != tc.code {
			t.Errorf("%v: code %d, want %d\n%s", tc.args, r.code, tc.code, r.stderr)
		}
	}
	// A ticket archived and deleted (retention.resolved_tickets): show names its file.
	if _, err := dbtest.Pool(t, dbURL).Exec(context.Background(),
		`INSERT INTO sweeper.ticket_archives (ticket_id, op_key, file) VALUES (888888, 'k', '/var/lib/sweeper/archive/tickets-x.jsonl')`); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, environ, "tickets", "show", "888888", "--config", cfgFile); r.code != exitFailure ||
		!strings.Contains(r.stderr, "ticket 888888 was archived to /var/lib/sweeper/archive/tickets-x.jsonl and deleted") {
		t.Errorf("tickets show of an archived ticket: code %d\n%s", r.code, r.stderr)
	}
	r = runCLI(t, environ, "tickets", "list", "--state", "resolved", "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stderr, "0 ticket(s)") {
		t.Errorf("resolved list: %s%s", r.stdout, r.stderr)
	}
}

func TestCommandsRefuseAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewEmptyDatabase(t)
	cfgFile := writeConfig(t, daemonConfig)
	r := runCLI(t, map[string]string{config.EnvDatabaseURL: dbURL}, "sweep", "--once", "--config", cfgFile)
	if r.code != exitFailure || !strings.Contains(r.stderr, "run 'sweeper migrate' first") {
		t.Errorf("code %d\n%s", r.code, r.stderr)
	}
}
