package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/tools/benchkit"
)

// TestBenchSmoke runs a small benchmark over a settled history against the
// test server: every figure is printed — the at-size timings and the
// floor among them — the last lines are the ratios, and the scratch
// database is gone afterwards.
func TestBenchSmoke(t *testing.T) {
	t.Parallel()
	server := dbtest.ServerURL(t)
	res := runCLI(t, map[string]string{"SWEEPER_DATABASE_URL": server},
		"bench", "--ops", "2000", "--history", "20000", "--latency", "0", "--concurrency", "20", "--river-jobs", "500", "--idle-ticks", "3", "--max-conns", "8")
	if res.code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	for _, figure := range []string{
		`settled_per_sec=[0-9.]+`,
		`latency_p50_ms=[0-9.]+ latency_p99_ms=[0-9.]+`,
		`statements_per_op=[0-9.]+`,
		`peak_rss_mib=[0-9.]+`,
		`river_noop_per_sec=[0-9.]+`,
		`^history: 20000 settled rows`,
		`idle_scan_ms=[0-9.]+ .*; 22000 rows, 0 pending`,
		`Index Scan using operations_pending_stale_idx`,
		`^metrics_refresh_ms=[0-9.]+`,
		`^incident_counts_ms=[0-9.]+`,
		`^lookalike_ms=[0-9.]+`,
		`^floor_per_sec=[0-9.]+ .*: 2000 operations, 1400 done, 600 review`,
		`^ratio_vs_floor=[0-9.]+$`,
		`(MET|MISSED) +latency 0: settled/s`,
		`(MET|MISSED) +idle tick`,
	} {
		if !regexp.MustCompile(`(?m)` + figure).MatchString(res.stdout) {
			t.Errorf("output lacks %s:\n%s", figure, res.stdout)
		}
	}
	if !strings.Contains(res.stdout, "settle: 2000 operations settled (1400 done, 600 review)") {
		t.Errorf("not every operation settled:\n%s", res.stdout)
	}

	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	value, ok := strings.CutPrefix(last, "ratio_vs_river=")
	if !ok {
		t.Fatalf("last line %q, want ratio_vs_river=<number>", last)
	}
	if ratio, err := strconv.ParseFloat(value, 64); err != nil || ratio <= 0 {
		t.Errorf("ratio_vs_river=%q: want a positive number (%v)", value, err)
	}

	m := regexp.MustCompile(`(?m)^database: (sweeper_bench_[0-9a-f]+) \(dropped`).FindStringSubmatch(res.stdout)
	if m == nil {
		t.Fatalf("output does not name the database:\n%s", res.stdout)
	}
	exists, err := benchkit.Exists(context.Background(), server, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s was not dropped", m[1])
	}
}

// TestBenchLatencyReference runs a small benchmark with latency: it first
// measures the same settle with none, in a database of its own, and checks
// the latency target against that figure; both databases are dropped.
func TestBenchLatencyReference(t *testing.T) {
	t.Parallel()
	server := dbtest.ServerURL(t)
	res := runCLI(t, map[string]string{"SWEEPER_DATABASE_URL": server},
		"bench", "--ops", "1000", "--latency", "20ms", "--concurrency", "10", "--river-jobs", "200", "--idle-ticks", "1", "--max-conns", "8")
	if res.code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	zero := regexp.MustCompile(`(?m)^reference \(--latency 0s\): settled_per_sec=([0-9.]+)$`).FindStringSubmatch(res.stdout)
	if zero == nil {
		t.Fatalf("no reference run's settled_per_sec:\n%s", res.stdout)
	}
	if !regexp.MustCompile(`(?m)^zero_rate=` + regexp.QuoteMeta(zero[1]) + ` `).MatchString(res.stdout) {
		t.Errorf("zero_rate is not the reference run's figure %s:\n%s", zero[1], res.stdout)
	}
	// 10 × 100 / 0.02 s = 50,000/s: the reference figure is the lower
	// ceiling on this machine.
	target := regexp.MustCompile(`(?m)^  (MET|MISSED) +latency 20ms, concurrency 10, max_batch 100: settled/s [0-9.]+ ≥ 0\.8 × the --latency 0s figure ` +
		regexp.QuoteMeta(zero[1]) + ` \(below 10 × 100 / 0\.020s\) = [0-9.]+ \([0-9.]+ of it\)$`)
	if !target.MatchString(res.stdout) {
		t.Errorf("no latency target against the reference figure:\n%s", res.stdout)
	}
	dbs := regexp.MustCompile(`(?m)^(?:reference \(--latency 0s\): )?database: (sweeper_bench_[0-9a-f]+) \(dropped`).FindAllStringSubmatch(res.stdout, -1)
	if len(dbs) != 2 {
		t.Fatalf("want two databases named, got %d:\n%s", len(dbs), res.stdout)
	}
	for _, m := range dbs {
		exists, err := benchkit.Exists(context.Background(), server, m[1])
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("database %s was not dropped", m[1])
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "unknown flag: --nope"},
		{"concurrency out of range", []string{"--concurrency", "0"}, "--concurrency: must be between 1 and 1000"},
		{"stale out of range", []string{"--stale", "1.5"}, "--stale: must be between 0 and 1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			res := runCLI(t, map[string]string{}, append([]string{"bench"}, tc.args...)...)
			if res.code != exitUsage {
				t.Errorf("exit %d, want %d", res.code, exitUsage)
			}
			if !strings.Contains(res.stderr, tc.want) {
				t.Errorf("stderr %q lacks %q", res.stderr, tc.want)
			}
		})
	}
}

// TestBenchReplicas runs a small benchmark settled by two daemon processes
// on one database: each reports its share, and none of the work was done
// twice.
func TestBenchReplicas(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "bench", "--ops", "2000", "--replicas", "2", "--concurrency", "20", "--idle-ticks", "1", "--max-conns", "6")
	cmd.Env = append(os.Environ(), "SWEEPER_DATABASE_URL="+dbtest.ServerURL(t))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, figure := range []string{
		`^settle: 2000 operations settled \(1400 done, 600 review\) by 2 replicas \(processes\)`,
		`^  replica 1: [0-9]+ operations looked up`,
		`^  replica 2: [0-9]+ operations looked up`,
		`^duplicate work: lookups_asked_twice=0 \(operations looked up 2000 − settled 2000\), operations_handed_on_twice=0, records_written_twice=0 `,
		`^replicas=2 settled_per_sec=[0-9.]+ statements_per_op=[0-9.]+$`,
	} {
		if !regexp.MustCompile(`(?m)` + figure).MatchString(out) {
			t.Errorf("output lacks %s:\n%s", figure, out)
		}
	}
}
