package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/internal/logs"
	"github.com/sweeper/sweeper/testkit/pgtemp"
)

// TestDroppedDatabaseLogsOnceAWindow runs the daemon with its log set from
// the environment (SWEEPER_LOG_LEVEL=warn, SWEEPER_LOG_FORMAT=json), then
// takes its database away for longer than a dedup window. River's fetch
// loops, the sweep and the Slack dispatcher all fail at once and keep
// failing: the outage is one WARN of sweeper's own, River's lines are
// DEBUG meanwhile, and any other error is written at most twice a window
// (the rest counted in a line of its own, more_like_this) — not dozens of
// identical lines.
func TestDroppedDatabaseLogsOnceAWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := migratedCluster(t)

	bin := binary(t)
	listen := freeListen(t)
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q", listen), 1))
	d := startDaemonWith(t, bin, cfgFile, cluster.URL, listen, "SWEEPER_LOG_LEVEL=warn", "SWEEPER_LOG_FORMAT=json")
	out := d.output
	if strings.Contains(out.String(), "sweeper running") {
		t.Fatalf("an INFO line at log.level warn:\n%s", out.String())
	}

	if err := cluster.Halt(ctx, pgtemp.ShutdownFast); err != nil {
		t.Fatal(err)
	}
	halted := time.Now()
	waitFor(t, d, 10*time.Second, "the line saying the database is unreachable", func() bool {
		return strings.Contains(out.String(), `"database unreachable since `)
	})
	// Past the dedup window's end: what it held back is written by then.
	time.Sleep(time.Until(halted.Add(logs.DefaultWindow + 5*time.Second)))
	took := time.Since(halted)
	logged := out.String()
	// Back up, so that the cluster stops as a running one.
	if err := cluster.Resume(ctx); err != nil {
		t.Fatal(err)
	}

	type key struct{ level, msg, error, provider string }
	written, counted := map[key]int{}, map[key]float64{}
	for line := range strings.Lines(logged) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not JSON at log.format json: %v\n%s", err, line)
		}
		if m["level"] == "INFO" || m["level"] == "DEBUG" {
			t.Errorf("a line below log.level warn: %s", line)
		}
		if _, has := m["err"]; has {
			t.Errorf(`a line with "err", not "error": %s`, line)
		}
		e, _ := m["error"].(string)
		if e == "" || m["attempt"] != nil {
			continue
		}
		k := key{fmt.Sprint(m["level"]), fmt.Sprint(m["msg"]), e, fmt.Sprint(m["provider"])}
		if n, ok := m["more_like_this"].(float64); ok {
			counted[k] += n
			continue
		}
		written[k]++
	}
	total, held, outages := 0, 0.0, 0
	for k, n := range written {
		if strings.HasPrefix(k.msg, "database unreachable since ") {
			outages += n
		}
		total += n
		held += counted[k]
		// Within the first window and a half, a key's first line and, when
		// its window ended quiet, one more.
		t.Logf("%d written, %.0f counted: %s %q (%s)", n, counted[k], k.level, k.msg, k.error)
		if n > 2 {
			t.Errorf("%d identical lines in %s: %+v", n, took.Round(time.Second), k)
		}
	}
	t.Logf("%s after the database went away: %d error lines written for %d distinct errors, %.0f more counted", took.Round(time.Second), total, len(written), held)
	if outages != 1 {
		t.Errorf("%d lines saying the database is unreachable, want 1:\n%s", outages, logged)
	}
}

// TestDatabaseRestartIsSaidOnce runs the daemon at the default log level
// and stops its PostgreSQL for 20 seconds. Everything fails while it is
// down — River's fetch loops, its leader election, the sweep, the
// metrics' reading — and all that is said of it, from the stop until well
// past the end of the dedup window, is at most a dozen lines: exactly one
// WARN of sweeper's own that the database is unreachable, and exactly one
// INFO when it is back, saying how long it was down.
func TestDatabaseRestartIsSaidOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := migratedCluster(t)

	bin := binary(t)
	listen := freeListen(t)
	// A sweep a minute: the lines counted are the outage's, not the
	// routine "sweep done" of a sweep each second.
	cfg := strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, fmt.Sprintf("listen = %q", listen), 1)
	cfgFile := writeConfig(t, strings.Replace(cfg, `sweep = "@every 1s"`, `sweep = "@every 1m"`, 1))
	d := startDaemonWith(t, bin, cfgFile, cluster.URL, listen, "SWEEPER_LOG_FORMAT=json")
	out := d.output
	waitFor(t, d, 30*time.Second, "the daemon running", func() bool {
		return strings.Contains(out.String(), "sweeper running")
	})
	before := len(out.String())

	if err := cluster.Halt(ctx, pgtemp.ShutdownFast); err != nil {
		t.Fatal(err)
	}
	halted := time.Now()
	// The outage's length, not a race: nothing is waited for meanwhile.
	time.Sleep(20 * time.Second)
	if err := cluster.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, d, 30*time.Second, "a line saying the database is back", func() bool {
		return strings.Contains(out.String()[before:], "database reachable again")
	})
	// Past the dedup window's end, so that any line counting what was
	// held back during the outage is written and counted too.
	time.Sleep(time.Until(halted.Add(logs.DefaultWindow + 5*time.Second)))
	logged := out.String()[before:]

	var warns, infos []map[string]any
	lines := 0
	for line := range strings.Lines(logged) {
		lines++
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not JSON at log.format json: %v\n%s", err, line)
		}
		msg, _ := m["msg"].(string)
		switch {
		case strings.HasPrefix(msg, "database unreachable"):
			warns = append(warns, m)
		case strings.HasPrefix(msg, "database reachable again"):
			infos = append(infos, m)
		}
	}
	t.Logf("%d lines from the stop to %s after it:\n%s", lines, time.Since(halted).Round(time.Second), logged)
	if lines > 12 {
		t.Errorf("%d lines for one 20s restart, want at most 12", lines)
	}
	if len(warns) != 1 || warns[0]["level"] != "WARN" || warns[0]["since"] == nil {
		t.Errorf("sweeper's own lines that the database is unreachable = %v, want one WARN with since", warns)
	}
	if len(infos) != 1 || infos[0]["level"] != "INFO" {
		t.Fatalf("sweeper's own lines that the database is back = %v, want one INFO", infos)
	}
	down, err := time.ParseDuration(fmt.Sprint(infos[0]["down"]))
	if err != nil || down < 19*time.Second || down > 40*time.Second {
		t.Errorf("the database was down %v (%v) by the INFO line, want about 20s", infos[0]["down"], err)
	}
}
