package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/internal/testkit/pgtemp"
	"github.com/sweeper/sweeper/migrations"
)

// TestDroppedDatabaseLogsOnceAWindow runs the daemon with its log set from
// the environment (SWEEPER_LOG_LEVEL=warn, SWEEPER_LOG_FORMAT=json), then
// takes its database away. River's fetch loops, the sweep and the Slack
// dispatcher all fail at once and keep failing: each distinct error is
// written once, and the rest are counted in a line of their own
// (more_like_this) when the window ends — not dozens of identical lines.
func TestDroppedDatabaseLogsOnceAWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, err := pgtemp.Start(ctx)
	if err != nil {
		t.Fatalf("PostgreSQL cluster of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	pool, err := pgxpool.New(ctx, cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.New(pool, nil).Up(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	pool.Close()

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
	waitFor(t, d, 50*time.Second, "a line counting the errors held back", func() bool {
		return strings.Contains(out.String(), `"more_like_this"`)
	})
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
	total, held := 0, 0.0
	for k, n := range written {
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
	if held == 0 {
		t.Errorf("no line counted what was held back:\n%s", logged)
	}
}
