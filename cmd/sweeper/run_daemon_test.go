package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/pgtemp"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// freeListen returns a loopback host:port nobody listens on.
func freeListen(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startDaemonWith starts `sweeper run` on cfgFile with the database at
// dbURL and the extra environment, and waits until it answers /healthz on
// listen.
func startDaemonWith(t *testing.T, bin, cfgFile, dbURL, listen string, environ ...string) *daemonProc {
	t.Helper()
	env := map[string]string{config.EnvDatabaseURL: dbURL}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	d := startDaemonEnv(t, bin, cfgFile, env)
	waitFor(t, d, 30*time.Second, "/healthz", func() bool {
		code, _ := httpGet(t, "http://"+listen+"/healthz", nil)
		return code == http.StatusOK
	})
	return d
}

// httpGet answers the status and body of a GET, 0 when nothing answered.
// auth, when not nil, is the basic auth user and password.
func httpGet(t *testing.T, url string, auth []string) (int, string) {
	t.Helper()
	code, body, _ := httpGetHeader(t, url, auth)
	return code, body
}

func httpGetHeader(t *testing.T, url string, auth []string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != nil {
		req.SetBasicAuth(auth[0], auth[1])
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, "", nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// stopDaemon sends SIGTERM and requires a clean exit.
func stopDaemon(t *testing.T, d *daemonProc) {
	t.Helper()
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
}

// TestDaemonMetricsRiverUIAndSignals runs `sweeper run` as a process with
// the River UI on, a SIGHUP (a reload of the unchanged file), settled operations and an escalation, then
// checks the event metrics on /metrics, the UI behind basic auth, and the
// configured shutdown grace on SIGTERM.
func TestDaemonMetricsRiverUIAndSignals(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	listen := freeListen(t)
	text := strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q\nriver_ui = true", listen), 1)
	text = strings.Replace(text, `sweep = "@every 1s"`, "sweep = \"@every 1s\"\nescalate = \"@every 1s\"", 1)
	text = strings.Replace(text, "[review]", "[river]\nshutdown_grace = \"3s\"\n\n[review]", 1)
	cfgFile := writeConfig(t, text)
	const user, password = "ops", "correct-horse-battery"
	passwordFile := filepath.Join(t.TempDir(), "riverui-password")
	if err := os.WriteFile(passwordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemonWith(t, bin, cfgFile, dbURL, listen,
		config.EnvRiverUIUser+"="+user, config.EnvRiverUIPass+"_FILE="+passwordFile)
	base := "http://" + listen

	// SIGHUP reloads the unchanged file: the daemon keeps serving.
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, 10*time.Second, "the reload line in the log", func() bool {
		return strings.Contains(d.output.String(), "configuration reloaded")
	})
	select {
	case <-d.exited:
		t.Fatalf("the daemon exited on SIGHUP: %v\n%s", d.err, d.output.String())
	default:
	}
	if code, _ := httpGet(t, base+"/healthz", nil); code != http.StatusOK {
		t.Fatalf("/healthz after SIGHUP: %d", code)
	}

	seed(t, dbURL, "found-o1", "many-o2", "nf-o3")
	waitFor(t, d, time.Minute, "operations settled", func() bool {
		return queryCount(t, pool, `SELECT count(*) FROM ledger.operations WHERE status = 'pending'`) == 0
	})
	// Both tickets past their deadline: the next escalation pass takes a
	// step for each.
	if err := execAsSweeper(context.Background(), pool, `UPDATE sweeper.tickets SET deadline = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, time.Minute, "tickets escalated", func() bool {
		return queryCount(t, pool, `SELECT count(*) FROM sweeper.ticket_events WHERE kind = 'escalated'`) == 2
	})

	var code int
	var body string
	wants := []string{
		`sweeper_operations_settled_total{outcome="done",provider="sim"} 1`,
		`sweeper_operations_settled_total{outcome="review",provider="sim"} 2`,
		`sweeper_tickets_opened_total{reason="multiple_matches"} 1`,
		`sweeper_tickets_opened_total{reason="not_found"} 1`,
		`sweeper_lookup_duration_seconds_bucket{provider="sim",result="found",le="0.005"}`,
		`sweeper_lookup_duration_seconds_count{provider="sim",result="multiple"}`,
		`sweeper_escalations_total{level="0",step="repeat"} 2`,
		`sweeper_slack_posts_total{kind="root"} 0`,
		`sweeper_slack_parked_total{receiver="slack"} 0`,
		`sweeper_slack_uncertain_total 0`,
		`sweeper_slack_adopted_total 0`,
		// The state gauges, read every metrics_refresh, are there too.
		`sweeper_ledger_operations{provider="sim",status="review"} 2`,
		`sweeper_database_up 1`,
	}
	waitFor(t, d, 30*time.Second, "every series on /metrics", func() bool {
		code, body = httpGet(t, base+"/metrics", nil)
		return code == http.StatusOK && !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(body, w) })
	})
	// Each sweep counts what it scans, and a sweep that runs while the
	// lookups of the last one are still under way (a loaded machine) scans
	// them again: at least the three seeded.
	if m := regexp.MustCompile(`(?m)^sweeper_operations_scanned_total\{provider="sim"\} (\d+)$`).FindStringSubmatch(body); m == nil {
		t.Errorf("/metrics lacks sweeper_operations_scanned_total{provider=\"sim\"}")
	} else if n, _ := strconv.Atoi(m[1]); n < 3 {
		t.Errorf("sweeper_operations_scanned_total{provider=\"sim\"} = %d, want at least 3", n)
	}

	// The River UI, behind basic auth.
	for _, tc := range []struct {
		desc string
		auth []string
	}{
		{"no credentials", nil},
		{"wrong password", []string{user, "wrong"}},
		{"wrong user", []string{"admin", password}},
		{"empty", []string{"", ""}},
	} {
		code, _, header := httpGetHeader(t, base+"/riverui/", tc.auth)
		if code != http.StatusUnauthorized || !strings.HasPrefix(header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 with a Basic challenge", tc.desc, code, header.Get("WWW-Authenticate"))
		}
	}
	if code, _ := httpGet(t, base+"/riverui/api/jobs?state=completed", nil); code != http.StatusUnauthorized {
		t.Errorf("the UI's API without credentials: %d, want 401", code)
	}
	auth := []string{user, password}
	if code, body := httpGet(t, base+"/riverui/", auth); code != http.StatusOK || !strings.Contains(body, "<title>River</title>") {
		t.Errorf("/riverui/ with credentials: %d\n%.300s", code, body)
	}
	// The UI's API reads sweeper's schema through the daemon's client.
	// River marks a job completed shortly after its work is done (its
	// completer batches), so the lookups may take a moment to show.
	testwait.UntilNil(t, 10*time.Second, "a completed lookup in /riverui/api/jobs with credentials", func() error {
		code, body := httpGet(t, base+"/riverui/api/jobs?state=completed&limit=100", auth)
		if code == http.StatusOK && strings.Contains(body, `"kind":"lookup_batch"`) {
			return nil
		}
		return fmt.Errorf("%d\n%.500s", code, body)
	})

	stopDaemon(t, d)
	out := d.output.String()
	if !strings.Contains(out, `"grace":"3s"`) {
		t.Errorf("the stop did not use river.shutdown_grace = 3s:\n%s", out)
	}
	if strings.Contains(out, password) {
		t.Errorf("the daemon logged the River UI password:\n%s", out)
	}
}

// TestDaemonRiverUIOff: without http.river_ui there is no /riverui, with
// credentials or without.
func TestDaemonRiverUIOff(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	listen := freeListen(t)
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q", listen), 1))
	d := startDaemonWith(t, bin, cfgFile, dbURL, listen, config.EnvRiverUIUser+"=ops", config.EnvRiverUIPass+"=pw")
	for _, auth := range [][]string{nil, {"ops", "pw"}} {
		if code, _ := httpGet(t, "http://"+listen+"/riverui/", auth); code != http.StatusNotFound {
			t.Errorf("/riverui/ (auth %v): %d, want 404", auth != nil, code)
		}
	}
	stopDaemon(t, d)
}

// TestRiverUIWithoutCredentialsIsAConfigError: turning the UI on without
// both credentials stops `run` before it starts, naming the key and the
// variable.
func TestRiverUIWithoutCredentialsIsAConfigError(t *testing.T) {
	t.Parallel()
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, "listen = \"127.0.0.1:0\"\nriver_ui = true", 1))
	for _, tc := range []struct {
		desc    string
		environ map[string]string
		want    string
	}{
		{"neither", nil, "http.river_ui: environment variable SWEEPER_RIVERUI_USER is not set (nor SWEEPER_RIVERUI_USER_FILE)"},
		{"no password", map[string]string{config.EnvRiverUIUser: "ops"},
			"http.river_ui: environment variable SWEEPER_RIVERUI_PASSWORD is not set (nor SWEEPER_RIVERUI_PASSWORD_FILE)"},
	} {
		r := runCLI(t, tc.environ, "run", "--config", cfgFile)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: code %d\n%s\nwant exit %d with %q", tc.desc, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

// waitFor waits up to timeout for cond while d runs: d's exit fails the
// test at once, and a timeout shows d's output.
func waitFor(t *testing.T, d *daemonProc, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.UntilNil(t, timeout, what, func() error {
		select {
		case <-d.exited:
			t.Fatalf("the daemon exited while waiting for %s: %v\n%s", what, d.err, d.output.String())
		default:
		}
		if cond() {
			return nil
		}
		return daemonOutput{d}
	})
}

// daemonOutput is an error whose text is a daemon's output so far, read
// only when printed.
type daemonOutput struct{ d *daemonProc }

func (o daemonOutput) Error() string { return "the daemon's output:\n" + o.d.output.String() }

// queryCount runs a count query.
func queryCount(t *testing.T, pool *pgxpool.Pool, query string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunWaitsForItsDatabase starts `sweeper run` while its PostgreSQL is
// down: the daemon keeps trying instead of exiting, starts working once the
// server is back, and stops cleanly on SIGTERM.
func TestRunWaitsForItsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := migratedCluster(t)
	seed(t, cluster.URL, "found-while-down-1")
	if err := cluster.Halt(ctx, pgtemp.ShutdownFast); err != nil {
		t.Fatal(err)
	}

	bin := binary(t)
	listen := freeListen(t)
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q", listen), 1))
	d := startDaemonEnv(t, bin, cfgFile, map[string]string{config.EnvDatabaseURL: cluster.URL})
	out := d.output

	waitFor(t, d, 45*time.Second, "a second try at the database", func() bool {
		return strings.Count(out.String(), "database not ready; trying again") >= 2
	})
	if code, _ := httpGet(t, "http://"+listen+"/healthz", nil); code != 0 {
		t.Fatalf("/healthz answered %d before the daemon had its database", code)
	}
	if err := cluster.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, 45*time.Second, "/healthz once the database is back", func() bool {
		code, _ := httpGet(t, "http://"+listen+"/healthz", nil)
		return code == http.StatusOK
	})
	check, err := pgxpool.New(ctx, cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	waitFor(t, d, 45*time.Second, "the stale operation settled", func() bool {
		var status string
		err := check.QueryRow(ctx, `SELECT status FROM ledger.operations WHERE op_key = 'found-while-down-1'`).Scan(&status)
		return err == nil && status == "done"
	})
	stopDaemons(t, []*daemonProc{d})
}

// TestAdminListener: with http.admin_listen set, /metrics, /healthz,
// /readyz and River's UI are served there and nowhere else — the listener
// that faces Slack answers 404 for them — and `sweeper healthcheck` asks
// the admin listener.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	listen, admin := freeListen(t), freeListen(t)
	text := strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`,
		fmt.Sprintf("listen = %q\nadmin_listen = %q\nriver_ui = true", listen, admin), 1)
	cfgFile := writeConfig(t, text)
	d := startDaemonWith(t, bin, cfgFile, dbURL, admin, config.EnvRiverUIUser+"=ops", config.EnvRiverUIPass+"=pw")
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/riverui/"} {
		if code, _ := httpGet(t, "http://"+listen+path, []string{"ops", "pw"}); code != http.StatusNotFound {
			t.Errorf("%s on http.listen: %d, want 404", path, code)
		}
	}
	waitFor(t, d, 30*time.Second, "/readyz on the admin listener", func() bool {
		code, _ := httpGet(t, "http://"+admin+"/readyz", nil)
		return code == http.StatusOK
	})
	for _, path := range []string{"/healthz", "/metrics", "/riverui/"} {
		if code, _ := httpGet(t, "http://"+admin+path, []string{"ops", "pw"}); code != http.StatusOK {
			t.Errorf("%s on http.admin_listen: %d, want 200", path, code)
		}
	}
	r := runCLI(t, nil, "healthcheck", "--config", cfgFile, "--path", "/readyz")
	if r.code != exitOK || !strings.Contains(r.stdout, admin) {
		t.Errorf("healthcheck: code %d, %q; want 0, asking %s\n%s", r.code, r.stdout, admin, r.stderr)
	}
}
