package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

// reloadConfigText is a daemon's configuration with the database URL in
// the file (a reload compares the file's), JSON logs at level, and the
// workflow billing owned by billingOwner.
func reloadConfigText(dbURL, listen, level, billingOwner string) string {
	text := strings.Replace(daemonConfig, `url = "postgres://unused"`, fmt.Sprintf("url = %q", dbURL), 1)
	text = strings.Replace(text, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q", listen), 1)
	text = strings.Replace(text, `default_owner = "U0DEFAULT1"`,
		fmt.Sprintf("default_owner = \"U0DEFAULT1\"\n[review.owners.workflows]\nbilling = %q", billingOwner), 1)
	return text + fmt.Sprintf("\n[log]\nlevel = %q\nformat = \"json\"\n", level)
}

// startReloadDaemon starts `sweeper run` on the configuration file it
// returns, the database URL in the file alone.
func startReloadDaemon(t *testing.T, text, listen string) (*daemonProc, string) {
	t.Helper()
	cfgFile := writeConfig(t, text)
	d := startDaemonEnv(t, binary(t), cfgFile, map[string]string{})
	waitFor(t, d, 30*time.Second, "/healthz", func() bool {
		code, _ := httpGet(t, "http://"+listen+"/healthz", nil)
		return code == http.StatusOK
	})
	return d, cfgFile
}

// rewrite replaces the configuration file's text.
func rewrite(t *testing.T, file, text string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// reloadMetrics reads sweeper_config_last_reload_successful and
// sweeper_config_last_reload_success_timestamp_seconds from /metrics.
func reloadMetrics(t *testing.T, listen string) (ok float64, at float64) {
	t.Helper()
	_, body := httpGet(t, "http://"+listen+"/metrics", nil)
	read := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics lacks %s", name)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	return read("sweeper_config_last_reload_successful"), read("sweeper_config_last_reload_success_timestamp_seconds")
}

// ticketOwner waits for op's ticket and returns its owner.
func ticketOwner(t *testing.T, d *daemonProc, pool *pgxpool.Pool, op string) string {
	t.Helper()
	var owner string
	waitFor(t, d, 20*time.Second, op+"'s ticket", func() bool {
		return pool.QueryRow(context.Background(), `SELECT owner FROM sweeper.tickets WHERE op_key = $1`, op).Scan(&owner) == nil
	})
	return owner
}

// logCount counts the daemon's log lines holding s.
func logCount(d *daemonProc, s string) int { return strings.Count(d.output.String(), s) }

// TestReloadOnSIGHUP changes a running daemon's configuration file and
// sends SIGHUP: the new log level, owner and sweep schedule take effect
// without a restart (the sweep's periodic job replaced, operations still
// settled); a broken file is refused whole and the old configuration
// keeps running; a changed database.url is refused by name.
func TestReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	listen := freeListen(t)
	d, cfgFile := startReloadDaemon(t, reloadConfigText(dbURL, listen, "info", "U0BILLING1"), listen)
	hup := func() {
		t.Helper()
		if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}

	seed(t, dbURL, "nf-before")
	if got := ticketOwner(t, d, pool, "nf-before"); got != "U0BILLING1" {
		t.Fatalf("before the reload, owner %q; want U0BILLING1", got)
	}
	if n := logCount(d, `"level":"DEBUG"`); n != 0 {
		t.Fatalf("%d DEBUG lines at log.level info", n)
	}
	_, started := reloadMetrics(t, listen)

	// Live keys: the level, an owner, the sweep's schedule.
	next := strings.Replace(reloadConfigText(dbURL, listen, "debug", "U0BILLING2"), `sweep = "@every 1s"`, `sweep = "@every 2s"`, 1)
	rewrite(t, cfgFile, next)
	hup()
	waitFor(t, d, 10*time.Second, "the reload's INFO line", func() bool { return logCount(d, "configuration reloaded") == 1 })
	out := d.output.String()
	for _, key := range []string{"log.level", "review.owners.workflows.billing", "schedules.sweep"} {
		if !strings.Contains(out[strings.Index(out, "configuration reloaded"):], key) {
			t.Errorf("the reload's line does not name %s", key)
		}
	}
	waitFor(t, d, 10*time.Second, "a DEBUG line", func() bool { return logCount(d, `"level":"DEBUG"`) > 0 })
	seed(t, dbURL, "nf-after")
	if got := ticketOwner(t, d, pool, "nf-after"); got != "U0BILLING2" {
		t.Errorf("after the reload, owner %q; want U0BILLING2", got)
	}
	if got := ticketOwner(t, d, pool, "nf-before"); got != "U0BILLING1" {
		t.Errorf("the ticket opened before the reload changed owner to %q", got)
	}
	if ok, at := reloadMetrics(t, listen); ok != 1 || at < started {
		t.Errorf("after a good reload: successful %v, timestamp %v (started %v); want 1 and no earlier", ok, at, started)
	}

	// A file with errors: refused whole, each error logged by its key, the
	// running configuration kept — its good owner change included.
	broken := strings.Replace(next, `sweep = "@every 2s"`, `sweep = "now and then"`, 1)
	broken = strings.Replace(broken, `billing = "U0BILLING2"`, `billing = "U0BILLING9"`, 1)
	broken = strings.Replace(broken, `default_owner = "U0DEFAULT1"`, "default_owner = \"U0DEFAULT1\"\nwindow = \"soon\"", 1)
	rewrite(t, cfgFile, broken)
	hup()
	waitFor(t, d, 10*time.Second, "the refusal", func() bool { return logCount(d, "configuration reload refused") == 1 })
	for _, key := range []string{"configuration reload: schedules.sweep:", "configuration reload: review.window:"} {
		if logCount(d, key) != 1 {
			t.Errorf("no ERROR line %q", key)
		}
	}
	if ok, _ := reloadMetrics(t, listen); ok != 0 {
		t.Errorf("after a refused reload: successful %v, want 0", ok)
	}
	seed(t, dbURL, "nf-broken")
	if got := ticketOwner(t, d, pool, "nf-broken"); got != "U0BILLING2" {
		t.Errorf("after a refused reload, owner %q; want the running U0BILLING2", got)
	}

	// database.url needs a restart: a WARN names it; the rest applies.
	other := strings.Replace(next, fmt.Sprintf("url = %q", dbURL), `url = "postgres://127.0.0.1:1/elsewhere"`, 1)
	other = strings.Replace(other, `billing = "U0BILLING2"`, `billing = "U0BILLING3"`, 1)
	rewrite(t, cfgFile, other)
	hup()
	waitFor(t, d, 10*time.Second, "the WARN naming database.url", func() bool {
		return logCount(d, "database.url changed, but only a restart applies it") == 1
	})
	if ok, _ := reloadMetrics(t, listen); ok != 0 {
		t.Errorf("with database.url awaiting a restart: successful %v, want 0", ok)
	}
	seed(t, dbURL, "nf-url")
	if got := ticketOwner(t, d, pool, "nf-url"); got != "U0BILLING3" {
		t.Errorf("beside a refused database.url, owner %q; want U0BILLING3 applied", got)
	}
	if code, _ := httpGet(t, "http://"+listen+"/readyz", nil); code != http.StatusOK {
		t.Errorf("/readyz after the reloads: %d", code)
	}
	stopDaemon(t, d)
}

// TestReloadOverHTTP: POST /-/reload on the admin endpoints reloads as
// SIGHUP does and answers what it applied; a GET is 405 and reloads
// nothing; a broken file is a 500 and leaves the old configuration.
func TestReloadOverHTTP(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	listen := freeListen(t)
	d, cfgFile := startReloadDaemon(t, reloadConfigText(dbURL, listen, "info", "U0BILLING1"), listen)
	url := "http://" + listen + "/-/reload"
	post := func() (int, string) {
		t.Helper()
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(url, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}

	rewrite(t, cfgFile, reloadConfigText(dbURL, listen, "debug", "U0BILLING1"))
	if code, _ := httpGet(t, url, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload: %d, want 405", code)
	}
	if n := logCount(d, "configuration reloaded"); n != 0 {
		t.Errorf("a GET reloaded (%d lines)", n)
	}
	code, body := post()
	if code != http.StatusOK || !strings.Contains(body, "applied: log.level") {
		t.Errorf("POST /-/reload: %d %q; want 200 naming log.level", code, body)
	}
	waitFor(t, d, 10*time.Second, "a DEBUG line", func() bool { return logCount(d, `"level":"DEBUG"`) > 0 })
	if ok, _ := reloadMetrics(t, listen); ok != 1 {
		t.Errorf("after a good reload: successful %v, want 1", ok)
	}

	rewrite(t, cfgFile, "[review\n")
	code, body = post()
	if code != http.StatusInternalServerError || !strings.Contains(body, "refused") {
		t.Errorf("POST /-/reload of a broken file: %d %q; want 500 saying refused", code, body)
	}
	if ok, _ := reloadMetrics(t, listen); ok != 0 {
		t.Errorf("after a refused reload: successful %v, want 0", ok)
	}
	stopDaemon(t, d)
}
