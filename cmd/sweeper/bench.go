package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/benchkit"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
)

// benchFlags are `sweeper bench`'s settings.
type benchFlags struct {
	ops         int
	stale       float64
	latency     time.Duration
	concurrency int
	commitBatch int
	batchSize   int
	maxConns    int
	riverJobs   int
	idleTicks   int
	rssBaseline float64
	timeout     time.Duration
	cpuprofile  string
	keep        bool
}

// benchRiverSchema holds the River tables of the no-op yardstick, apart from
// sweeper's own.
const benchRiverSchema = "bench_river"

func runBench(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "bench", "bench [--ops N] [--stale F] [--latency D] [--concurrency C] [flags]\n\n"+
		"Creates a database sweeper_bench_<random> (on $SWEEPER_DATABASE_URL's server, else 127.0.0.1:5432, else a\n"+
		"throwaway cluster), fills ledger.operations, runs the real sweep and lookup jobs over the sim provider until\n"+
		"every stale row is settled, times River alone on no-op jobs with as many workers, measures an idle sweep\n"+
		"tick, prints the figures beside their targets, and drops the database. The last line is\n"+
		"ratio_vs_river=<settled/s ÷ River no-op jobs/s> (not printed with --stale 0, which measures the idle tick only).")
	var f benchFlags
	fs.IntVar(&f.ops, "ops", 10000, "rows in ledger.operations")
	fs.Float64Var(&f.stale, "stale", 1.0, "fraction of the rows that are stale pending (0–1); the rest are done")
	fs.DurationVar(&f.latency, "latency", 0, "sim provider latency per lookup")
	fs.IntVar(&f.concurrency, "concurrency", 100, "river.max_workers and the provider's concurrency (1–1000)")
	fs.IntVar(&f.commitBatch, "commit-batch", 100, "outcomes per commit (1: a transaction each)")
	fs.IntVar(&f.batchSize, "batch", 500, "sweep.batch_size: rows per page of the stale scan (1–10000)")
	fs.IntVar(&f.maxConns, "max-conns", 20, "database.max_conns: the pool River and sweeper share")
	fs.IntVar(&f.riverJobs, "river-jobs", 0, "no-op jobs for River's own throughput (default max(1000, 50 × concurrency))")
	fs.IntVar(&f.idleTicks, "idle-ticks", 9, "idle sweep ticks to time (the median is reported)")
	fs.Float64Var(&f.rssBaseline, "rss-baseline", 0, "peak RSS in MiB of a --ops 10000 run, to check the memory target against")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "give up when the stale rows are not all settled within this")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the settle phase to this file")
	fs.BoolVar(&f.keep, "keep", false, "keep the database instead of dropping it")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(e.stderr, "sweeper bench: %v\n", err)
		return exitUsage
	}
	if f.riverJobs == 0 {
		f.riverJobs = max(1000, 50*f.concurrency)
	}
	if err := runBenchPhases(ctx, e, f); err != nil {
		fmt.Fprintf(e.stderr, "sweeper bench: %v\n", err)
		return exitFailure
	}
	return exitOK
}

func (f *benchFlags) validate() error {
	var errs []error
	if f.ops < 1 {
		errs = append(errs, errors.New("--ops: must be at least 1"))
	}
	if !(f.stale >= 0 && f.stale <= 1) {
		errs = append(errs, errors.New("--stale: must be between 0 and 1"))
	}
	if f.latency < 0 {
		errs = append(errs, errors.New("--latency: must not be negative"))
	}
	if f.concurrency < 1 || f.concurrency > 1000 {
		errs = append(errs, errors.New("--concurrency: must be between 1 and 1000"))
	}
	if f.commitBatch < 1 {
		errs = append(errs, errors.New("--commit-batch: must be at least 1"))
	}
	if f.batchSize < 1 || f.batchSize > 10000 {
		errs = append(errs, errors.New("--batch: must be between 1 and 10000"))
	}
	if f.maxConns < 2 {
		errs = append(errs, errors.New("--max-conns: must be at least 2"))
	}
	if f.riverJobs < 0 {
		errs = append(errs, errors.New("--river-jobs: must not be negative"))
	}
	if f.idleTicks < 1 {
		errs = append(errs, errors.New("--idle-ticks: must be at least 1"))
	}
	if f.rssBaseline < 0 {
		errs = append(errs, errors.New("--rss-baseline: must not be negative"))
	}
	if f.timeout <= 0 {
		errs = append(errs, errors.New("--timeout: must be positive"))
	}
	return errors.Join(errs...)
}

// benchConfig is the configuration the benchmark runs sweeper with: the
// defaults, but for the sim provider and the flags.
func benchConfig(f benchFlags, dbURL string) string {
	return fmt.Sprintf(`
[database]
url = %q
max_conns = %d

[sweep]
batch_size = %d
query_timeout = "1m"
timeout = "2h"

[river]
max_workers = %d

[review]
default_owner = "bench-owner"

[providers.sim]
kind = "sim"
stale_after = "10m"
lookup_timeout = %q
lookup_budget = "10m"
rate_limit = 1000000.0
concurrency = %d
latency = %q
`, dbURL, f.maxConns, f.batchSize, f.concurrency, max(10*time.Second, 2*f.latency).String(),
		f.concurrency, f.latency.String()) + benchkit.SimRules
}

// benchResult gathers the figures the targets are checked against.
type benchResult struct {
	settledPerSec float64
	noopPerSec    float64
	peakRSSMiB    float64
	idleScan      time.Duration
	idleRows      int
	idleIndexOnly bool
}

func runBenchPhases(ctx context.Context, e *env, f benchFlags) (err error) {
	out := e.stdout
	server, err := benchkit.FindServer(ctx, e.getenv(config.EnvDatabaseURL))
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := server.Close(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	db, err := server.CreateDatabase(ctx, "sweeper_bench")
	if err != nil {
		return err
	}
	if f.keep {
		fmt.Fprintf(out, "database: %s (kept: --keep)\n", db.Name)
	} else {
		fmt.Fprintf(out, "database: %s (dropped at the end)\n", db.Name)
		defer func() {
			if dropErr := db.Drop(); dropErr != nil && err == nil {
				err = dropErr
			}
		}()
	}

	noEnv := func(string) string { return "" } // SWEEPER_DATABASE_URL must not redirect the config
	cfg, err := config.Parse(benchConfig(f, db.URL), providerKinds(), noEnv)
	if err != nil {
		return fmt.Errorf("bench configuration: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	provs, err := jobs.BuildProviders(cfg, providerKinds(), noEnv, logger)
	if err != nil {
		return err
	}
	counter := &benchkit.StatementCounter{}
	pool, err := benchPool(ctx, db.URL, int32(f.maxConns), counter)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.New(pool, nil).Up(ctx); err != nil {
		return err
	}
	// The benchmark's own reads go through a connection of their own, so
	// they are not counted as sweeper's statements.
	monitor, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		return err
	}
	defer monitor.Close(context.WithoutCancel(ctx))

	fill, err := benchkit.FillLedger(ctx, monitor, f.ops, f.stale, benchkit.DefaultMix)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "setup: %d operations, %d stale pending (%s), the rest done; sim latency %s; concurrency %d "+
		"(river.max_workers and provider concurrency); commit batch %d; sweep.batch_size %d; database.max_conns %d\n",
		fill.Rows, fill.Stale, benchkit.DefaultMix, f.latency, f.concurrency, f.commitBatch, f.batchSize, f.maxConns)
	fmt.Fprintf(out, "fill: %d rows in %s (INSERT … SELECT generate_series, then ANALYZE)\n", fill.Rows, fill.Elapsed.Round(time.Millisecond))

	s := &jobs.Sweeper{Config: cfg, Pool: pool, Providers: provs, Logger: logger}
	var res benchResult
	if fill.Stale > 0 {
		if err := benchSettle(ctx, out, f, s, monitor, counter, fill.Stale, &res); err != nil {
			return err
		}
		noopPool, err := benchPool(ctx, db.URL, int32(f.maxConns), nil)
		if err != nil {
			return err
		}
		noop, err := benchkit.RiverNoop(ctx, noopPool, benchRiverSchema, f.concurrency, f.riverJobs)
		noopPool.Close()
		if err != nil {
			return err
		}
		res.noopPerSec = noop.PerSecond()
		fmt.Fprintf(out, "river_noop_per_sec=%.1f  (River alone: %d no-op jobs inserted with InsertMany, %d workers, "+
			"schema %s of the same database, from the client's start until all completed: %s)\n",
			res.noopPerSec, noop.Jobs, f.concurrency, benchRiverSchema, noop.Elapsed.Round(time.Millisecond))
	}
	if err := benchIdle(ctx, out, f, s, monitor, &res); err != nil {
		return err
	}
	benchTargets(out, f, res, fill.Stale > 0)
	if fill.Stale > 0 {
		fmt.Fprintf(out, "ratio_vs_river=%.3f\n", res.settledPerSec/res.noopPerSec)
	}
	return nil
}

// benchPool opens a pool on u of maxConns connections, counting its
// statements with counter unless nil.
func benchPool(ctx context.Context, u string, maxConns int32, counter *benchkit.StatementCounter) (*pgxpool.Pool, error) {
	poolCfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, err
	}
	poolCfg.MaxConns = maxConns
	if counter != nil {
		poolCfg.ConnConfig.Tracer = counter
	}
	return pgxpool.NewWithConfig(ctx, poolCfg)
}

// benchSettle runs a real River client with sweeper's jobs, inserts one
// sweep job, and waits until no stale row is pending.
func benchSettle(ctx context.Context, out io.Writer, f benchFlags, s *jobs.Sweeper, monitor *pgx.Conn,
	counter *benchkit.StatementCounter, stale int, res *benchResult) error {
	daemon, err := s.NewDaemon(jobs.ClientOptions{NoPeriodic: true, CommitBatch: f.commitBatch})
	if err != nil {
		return err
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rssSource := "reset before the settle phase"
	if err := benchkit.ResetPeakRSS(); err != nil {
		rssSource = "the whole process: it could not be reset"
	}
	counter.Start()
	start := time.Now()
	if err := daemon.Start(ctx); err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = daemon.StopAndCancel(stopCtx)
		}
	}()
	if _, err := daemon.Client.Insert(ctx, jobs.SweepArgs{}, nil); err != nil {
		return err
	}
	deadline := start.Add(f.timeout)
	for {
		// EXISTS, not count(*): counting a large backlog every few
		// milliseconds would take a core from the database being measured.
		var left bool
		if err := monitor.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM ledger.operations WHERE status = 'pending')").Scan(&left); err != nil {
			return err
		}
		if !left {
			break
		}
		if time.Now().After(deadline) {
			var pending int
			if err := monitor.QueryRow(ctx, "SELECT count(*) FROM ledger.operations WHERE status = 'pending'").Scan(&pending); err != nil {
				return err
			}
			// What a cut-short run still shows: memory under the backlog.
			if peak, rssHow, err := benchkit.PeakRSS(); err == nil {
				fmt.Fprintf(out, "settle: cut short by --timeout: %d of %d settled in %s\n", stale-pending, stale, f.timeout)
				fmt.Fprintf(out, "peak_rss_mib=%.1f  (%s, %s, until --timeout)\n", float64(peak)/(1<<20), rssHow, rssSource)
			}
			return fmt.Errorf("settle: %d of %d stale operations still pending after %s", pending, stale, f.timeout)
		}
		time.Sleep(25 * time.Millisecond)
	}
	elapsed := time.Since(start)
	statements := counter.Stop()
	pprof.StopCPUProfile()
	peak, rssHow, err := benchkit.PeakRSS()
	if err != nil {
		return err
	}
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = daemon.Stop(stopCtx)
	cancel()
	stopped = true
	if err != nil {
		return fmt.Errorf("stop the River client: %w", err)
	}

	settled, err := benchkit.Settled(ctx, monitor)
	if err != nil {
		return err
	}
	n := settled.Done + settled.Review
	res.settledPerSec = float64(n) / elapsed.Seconds()
	res.peakRSSMiB = float64(peak) / (1 << 20)
	fmt.Fprintf(out, "settle: %d operations settled (%d done, %d review) in %s, from the sweep job's insert until none is pending\n",
		n, settled.Done, settled.Review, elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "settled_per_sec=%.1f\n", res.settledPerSec)
	fmt.Fprintf(out, "latency_p50_ms=%.1f latency_p99_ms=%.1f  (per operation, lookup job created_at → operations.updated_at "+
		"of the transaction that wrote the outcome, the ticket's too)\n",
		float64(settled.P50)/float64(time.Millisecond), float64(settled.P99)/float64(time.Millisecond))
	fmt.Fprintf(out, "statements_per_op=%.2f  (%d statements counted by a pgx QueryTracer/BatchTracer on the pool River and "+
		"sweeper share — BEGIN/COMMIT and River's own included — ÷ %d settled)\n", float64(statements)/float64(n), statements, n)
	for _, st := range counter.Top(10) {
		fmt.Fprintf(out, "  %7.3f/op %s\n", float64(st.Count)/float64(n), st.SQL)
	}
	fmt.Fprintf(out, "peak_rss_mib=%.1f  (%s, %s)\n", res.peakRSSMiB, rssHow, rssSource)
	if f.cpuprofile != "" {
		fmt.Fprintf(out, "cpu profile: %s (go tool pprof -top %s)\n", f.cpuprofile, f.cpuprofile)
	}
	return nil
}

// benchIdle times the stale scan over a ledger with nothing pending, as a
// sweep tick runs it, and prints the plan of its query.
func benchIdle(ctx context.Context, out io.Writer, f benchFlags, s *jobs.Sweeper, monitor *pgx.Conn, res *benchResult) error {
	// After a settle phase the partial index holds the settled rows' dead
	// entries until vacuum; autovacuum would have removed them by the next
	// tick.
	if _, err := monitor.Exec(ctx, "VACUUM (ANALYZE) ledger.operations"); err != nil {
		return err
	}
	var rows, pending int
	if err := monitor.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'pending') FROM ledger.operations`).Scan(&rows, &pending); err != nil {
		return err
	}
	scanner := s.Scanner()
	ticks := make([]time.Duration, f.idleTicks)
	for i := range ticks {
		start := time.Now()
		if _, err := scanner.Scan(ctx, func(context.Context, []ledger.Operation) error { return nil }); err != nil {
			return err
		}
		ticks[i] = time.Since(start)
	}
	slices.Sort(ticks)
	res.idleScan, res.idleRows = ticks[len(ticks)/2], rows
	fmt.Fprintf(out, "idle_scan_ms=%.3f  (one sweep tick's scan — every provider's stale query and the unconfigured-providers "+
		"query — median of %d, min %.3f, max %.3f; %d rows, %d pending; after VACUUM ANALYZE)\n",
		ms(res.idleScan), len(ticks), ms(ticks[0]), ms(ticks[len(ticks)-1]), rows, pending)

	negInf := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	cutoff := time.Now().Add(-s.Providers["sim"].StaleAfter)
	planRows, err := monitor.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+ledger.StalePendingQuery,
		"sim", cutoff, negInf, int64(0), f.batchSize)
	if err != nil {
		return err
	}
	plan, err := pgx.CollectRows(planRows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	text := strings.Join(plan, "\n")
	res.idleIndexOnly = strings.Contains(text, "Index") && !strings.Contains(text, "Seq Scan")
	fmt.Fprintln(out, "idle plan (EXPLAIN (ANALYZE, BUFFERS) of ledger.StalePendingQuery, provider sim):")
	for _, line := range plan {
		fmt.Fprintf(out, "  %s\n", line)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchTargets prints each target beside its figure, MET or MISSED.
func benchTargets(out io.Writer, f benchFlags, r benchResult, settled bool) {
	verdict := func(ok bool) string {
		if ok {
			return "MET   "
		}
		return "MISSED"
	}
	fmt.Fprintln(out, "targets (benchmarks on a possibly shared machine, not timed tests):")
	switch {
	case !settled:
		fmt.Fprintln(out, "  n/a    throughput: nothing stale (--stale 0)")
	case f.latency == 0:
		want := 0.3 * r.noopPerSec
		fmt.Fprintf(out, "  %s latency 0: settled/s %.1f ≥ 0.3 × River no-op jobs/s %.1f = %.1f\n",
			verdict(r.settledPerSec >= want), r.settledPerSec, r.noopPerSec, want)
	default:
		want := 0.8 * float64(f.concurrency) / f.latency.Seconds()
		fmt.Fprintf(out, "  %s latency %s, concurrency %d: settled/s %.1f ≥ 0.8 × %d / %.3fs = %.1f\n",
			verdict(r.settledPerSec >= want), f.latency, f.concurrency, r.settledPerSec, f.concurrency, f.latency.Seconds(), want)
	}
	switch {
	case !settled:
		fmt.Fprintln(out, "  n/a    peak RSS: no settle phase")
	case f.rssBaseline > 0:
		growth := r.peakRSSMiB/f.rssBaseline - 1
		fmt.Fprintf(out, "  %s peak RSS %.1f MiB vs --rss-baseline %.1f MiB: growth %+.1f%% < 20%%\n",
			verdict(growth < 0.2), r.peakRSSMiB, f.rssBaseline, 100*growth)
	default:
		fmt.Fprintf(out, "  n/a    peak RSS %.1f MiB: growth from a 10k to a 1M backlog must stay under 20%%; "+
			"compare peak_rss_mib of a --ops 10000 run and a --ops 1000000 run, or pass --rss-baseline MiB\n", r.peakRSSMiB)
	}
	scale := ""
	if r.idleRows < 1_000_000 {
		scale = fmt.Sprintf(" (on %d rows; the target is stated for 1,000,000)", r.idleRows)
	}
	fmt.Fprintf(out, "  %s idle tick %.3f ms < 10 ms%s\n", verdict(r.idleScan < 10*time.Millisecond), ms(r.idleScan), scale)
	fmt.Fprintf(out, "  %s idle plan uses an index, no sequential scan\n", verdict(r.idleIndexOnly))
}
