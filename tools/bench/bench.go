// Package bench is `sweeper bench`: settle throughput, latency, statements,
// memory and the idle scan, measured on a scratch database.
package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/providers/kinds"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/tools/benchkit"
)

// Options are `sweeper bench`'s settings; the CLI's flags of the same
// names set them.
type Options struct {
	Ops         int
	History     int // settled rows written before the run's own
	Replicas    int // daemons (processes) settling side by side; 0 runs the jobs in this process
	Stale       float64
	Latency     time.Duration
	Concurrency int
	BatchSize   int
	MaxBatch    int     // the sim provider's max_batch: operations per request
	ZeroRate    float64 // settled/s of a --latency 0s run, which caps the latency target
	MaxConns    int
	RiverJobs   int
	IdleTicks   int
	RssBaseline float64
	Timeout     time.Duration
	Cpuprofile  string
	Memprofile  string
	Keep        bool
	// Adopted settles a table of the workflows' own, mapped in [ledger]
	// (benchkit.AdoptedTable), instead of ledger.operations.
	Adopted bool
	// WorkerDB makes the process one replica of a --replicas run, on
	// this database: see [RunWorker].
	WorkerDB string

	Stdout, Stderr io.Writer
	Getenv         config.Getenv // SWEEPER_DATABASE_URL: the server to use
}

// benchRiverSchema holds the River tables of the no-op yardstick, apart from
// sweeper's own.
const benchRiverSchema = "bench_river"

// Validate says what is wrong with the options, every problem joined.
func (f *Options) Validate() error {
	var errs []error
	if f.Ops < 1 {
		errs = append(errs, errors.New("--ops: must be at least 1"))
	}
	if f.Replicas < 0 || f.Replicas > 16 {
		errs = append(errs, errors.New("--replicas: must be between 0 and 16"))
	}
	if f.Replicas > 0 && (f.Cpuprofile != "" || f.Memprofile != "") {
		errs = append(errs, errors.New("--replicas: profiles are of this process, which settles nothing with --replicas"))
	}
	if f.History < 0 || f.History > 1_000_000_000 {
		errs = append(errs, errors.New("--history: must be between 0 and 1,000,000,000"))
	}
	if !(f.Stale >= 0 && f.Stale <= 1) {
		errs = append(errs, errors.New("--stale: must be between 0 and 1"))
	}
	if f.Latency < 0 {
		errs = append(errs, errors.New("--latency: must not be negative"))
	}
	if f.Concurrency < 1 || f.Concurrency > 1000 {
		errs = append(errs, errors.New("--concurrency: must be between 1 and 1000"))
	}
	if f.BatchSize < 1 || f.BatchSize > 10000 {
		errs = append(errs, errors.New("--batch: must be between 1 and 10000"))
	}
	if f.MaxBatch < 1 || f.MaxBatch > 1000 {
		errs = append(errs, errors.New("--max-batch: must be between 1 and 1000"))
	}
	if !(f.ZeroRate >= 0) {
		errs = append(errs, errors.New("--zero-rate: must not be negative"))
	}
	if f.MaxConns < 2 {
		errs = append(errs, errors.New("--max-conns: must be at least 2"))
	}
	if f.RiverJobs < 0 {
		errs = append(errs, errors.New("--river-jobs: must not be negative"))
	}
	if f.IdleTicks < 1 {
		errs = append(errs, errors.New("--idle-ticks: must be at least 1"))
	}
	if f.RssBaseline < 0 {
		errs = append(errs, errors.New("--rss-baseline: must not be negative"))
	}
	if f.Timeout <= 0 {
		errs = append(errs, errors.New("--timeout: must be positive"))
	}
	if f.Adopted && f.History > 0 {
		errs = append(errs, errors.New("--history: not with --adopted (the history is written into ledger.operations' own layout)"))
	}
	return errors.Join(errs...)
}

// benchConfig is the configuration the benchmark runs sweeper with: the
// defaults, but for the sim provider and the flags.
func benchConfig(f Options, dbURL string) string {
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
simulated = true
stale_after = "10m"
lookup_timeout = %q
lookup_budget = "10m"
rate_limit = 10000.0
concurrency = %d
latency = %q
max_batch = %d
`, dbURL, f.MaxConns, f.BatchSize, f.Concurrency, max(10*time.Second, 2*f.Latency).String(),
		f.Concurrency, f.Latency.String(), f.MaxBatch) + benchkit.SimRules + adopted(f)
}

// adopted is the [ledger] section of an --adopted run's configuration.
func adopted(f Options) string {
	if !f.Adopted {
		return ""
	}
	return benchkit.AdoptedConfig
}

// benchResult gathers the figures the targets are checked against.
type benchResult struct {
	settledPerSec   float64
	statementsPerOp float64
	requestsPerOp   float64
	noopPerSec      float64
	floorPerSec     float64
	peakRSSMiB      float64
	idleScan        time.Duration
	idleRows        int
	idleIndexOnly   bool
}

// Run fills a scratch database, settles it with the real sweep and lookup
// jobs, times River alone and an idle tick, and prints the figures beside
// their targets on f.Stdout.
func Run(ctx context.Context, f Options) (err error) {
	if f.RiverJobs == 0 {
		f.RiverJobs = max(1000, 50*f.Concurrency)
	}
	server, err := benchkit.FindServer(ctx, f.Getenv(config.EnvDatabaseURL))
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := server.Close(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	if f.Latency > 0 && f.ZeroRate == 0 && f.Stale > 0 {
		// The latency target is capped by what the same settle reaches
		// with no latency, measured here, on this machine, just before.
		ref := f
		ref.Latency, ref.Cpuprofile, ref.Memprofile = 0, "", ""
		ref.Stdout = &prefixWriter{w: f.Stdout, prefix: "reference (--latency 0s): "}
		res, err := run(ctx, ref, server, true)
		if err != nil {
			return fmt.Errorf("the --latency 0s reference run: %w", err)
		}
		f.ZeroRate = res.settledPerSec
		fmt.Fprintf(f.Stdout, "zero_rate=%.1f  (settled/s of the same run with --latency 0s, just measured; --zero-rate skips it)\n", f.ZeroRate)
	}
	_, err = run(ctx, f, server, false)
	return err
}

// run is one bench run; a reference run measures the settle phase only.
func run(ctx context.Context, f Options, server *benchkit.Server, reference bool) (res benchResult, err error) {
	out := f.Stdout
	db, err := server.CreateDatabase(ctx, "sweeper_bench")
	if err != nil {
		return res, err
	}
	if f.Keep {
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
	cfg, err := config.Parse(benchConfig(f, db.URL), kinds.All(), noEnv)
	if err != nil {
		return res, fmt.Errorf("bench configuration: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(f.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	provs, err := app.BuildProviders(cfg, kinds.All(), noEnv, logger)
	if err != nil {
		return res, err
	}
	defer func() {
		for _, p := range provs {
			p.Close()
		}
	}()
	counter := &benchkit.StatementCounter{}
	pool, err := benchPool(ctx, db.URL, int32(f.MaxConns), counter)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	if _, err := migrations.New(pool, nil).Up(ctx); err != nil {
		return res, err
	}
	table := cfg.LedgerTable()
	if f.Adopted {
		if _, err := pool.Exec(ctx, benchkit.AdoptedTable); err != nil {
			return res, fmt.Errorf("create the adopted table: %w", err)
		}
		// With the guards, the table holds what ledger.operations holds:
		// the comparison is of like with like.
		if err := ledger.InstallGuards(ctx, pool, table); err != nil {
			return res, err
		}
		fmt.Fprintf(out, "ledger: %s, with sweeper's guards (sweeper adopt --apply --guards)\n", table)
	}
	// The benchmark's own reads go through a connection of their own, so
	// they are not counted as sweeper's statements.
	monitor, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		return res, err
	}
	defer monitor.Close(context.WithoutCancel(ctx))

	if f.History > 0 {
		took, err := benchkit.FillHistory(ctx, monitor, f.History)
		if err != nil {
			return res, err
		}
		fmt.Fprintf(out, "history: %d settled rows (90%% done, 10%% failed, 30–120 days old) in %s "+
			"(INSERT … SELECT generate_series, indexes built after, then VACUUM ANALYZE)\n", f.History, took.Round(time.Millisecond))
	}
	fill, err := benchkit.FillLedger(ctx, monitor, table, f.Ops, f.Stale, benchkit.DefaultMix)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(out, "setup: %d operations, %d stale pending (%s), the rest done; sim latency %s; concurrency %d "+
		"(river.max_workers and provider concurrency); sweep.batch_size %d; database.max_conns %d\n",
		fill.Rows, fill.Stale, benchkit.DefaultMix, f.Latency, f.Concurrency, f.BatchSize, f.MaxConns)
	fmt.Fprintf(out, "fill: %d rows in %s (INSERT … SELECT generate_series, then ANALYZE)\n", fill.Rows, fill.Elapsed.Round(time.Millisecond))

	s := &app.App{Config: cfg, Pool: pool, Providers: provs, Logger: logger}
	if fill.Stale > 0 && f.Replicas > 0 {
		if err := benchReplicas(ctx, out, f, s, db.URL, monitor, fill.Stale, &res); err != nil {
			return res, err
		}
		fmt.Fprintf(out, "replicas=%d settled_per_sec=%.1f statements_per_op=%.3f\n", f.Replicas, res.settledPerSec, res.statementsPerOp)
		return res, nil
	}
	if fill.Stale > 0 {
		if err := benchSettle(ctx, out, f, s, monitor, counter, fill.Stale, &res); err != nil {
			return res, err
		}
		if reference {
			return res, nil
		}
		noopPool, err := benchPool(ctx, db.URL, int32(f.MaxConns), nil)
		if err != nil {
			return res, err
		}
		noop, err := benchkit.RiverNoop(ctx, noopPool, benchRiverSchema, f.Concurrency, f.RiverJobs)
		noopPool.Close()
		if err != nil {
			return res, err
		}
		res.noopPerSec = noop.PerSecond()
		fmt.Fprintf(out, "river_noop_per_sec=%.1f  (River alone: %d no-op jobs inserted with InsertMany, %d workers, "+
			"schema %s of the same database, from the client's start until all completed: %s)\n",
			res.noopPerSec, noop.Jobs, f.Concurrency, benchRiverSchema, noop.Elapsed.Round(time.Millisecond))
	}
	if err := benchIdle(ctx, out, f, s, monitor, &res); err != nil {
		return res, err
	}
	if err := benchAtSize(ctx, out, f, s, monitor); err != nil {
		return res, err
	}
	if fill.Stale > 0 {
		floorPool, err := benchPool(ctx, db.URL, int32(f.MaxConns), nil)
		if err != nil {
			return res, err
		}
		floor, err := benchkit.Floor(ctx, floorPool, table, fill.Stale, jobs.LookupBatchSize,
			jobs.MaxOperationsInFlight/jobs.LookupBatchSize, benchkit.DefaultMix)
		floorPool.Close()
		if err != nil {
			return res, err
		}
		res.floorPerSec = floor.PerSecond()
		fmt.Fprintf(out, "floor_per_sec=%.1f  (the same outcome writes as bare set-based SQL, no River, no provider, no decision: "+
			"%d operations, %d done, %d review with ticket, opened event and outbox row; batches of %d, %d side by side, "+
			"one transaction each; %s)\n", res.floorPerSec, floor.Ops, floor.Done, floor.Review, jobs.LookupBatchSize,
			jobs.MaxOperationsInFlight/jobs.LookupBatchSize, floor.Elapsed.Round(time.Millisecond))
	}
	benchTargets(out, f, res, fill.Stale > 0)
	if fill.Stale > 0 {
		fmt.Fprintf(out, "ratio_vs_floor=%.3f\n", res.settledPerSec/res.floorPerSec)
		fmt.Fprintf(out, "ratio_vs_river=%.3f\n", res.settledPerSec/res.noopPerSec)
	}
	return res, nil
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
func benchSettle(ctx context.Context, out io.Writer, f Options, s *app.App, monitor *pgx.Conn,
	counter *benchkit.StatementCounter, stale int, res *benchResult) error {
	daemon, err := s.NewDaemon(app.ClientOptions{NoPeriodic: true})
	if err != nil {
		return err
	}
	if f.Cpuprofile != "" {
		pf, err := os.Create(f.Cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// What earlier phases (a reference run, the fill) left on the heap is
	// returned first, so that the peak is this settle phase's.
	runtime.GC()
	debug.FreeOSMemory()
	rssSource := "reset before the settle phase"
	if err := benchkit.ResetPeakRSS(); err != nil {
		rssSource = "the whole process: it could not be reset"
	}
	var heap heapPeak
	if f.Memprofile != "" {
		// A sample every 4 KiB instead of 512: the heap is small, and a
		// coarse profile hides what holds it.
		runtime.MemProfileRate = 4096
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
	deadline := start.Add(f.Timeout)
	for {
		if left, err := anyPending(ctx, monitor, s.Ledger()); err != nil {
			return err
		} else if !left {
			break
		}
		if time.Now().After(deadline) {
			var pending int
			if err := monitor.QueryRow(ctx, s.Ledger().SQL("SELECT count(*) FROM {T} WHERE {c:status} = {w:pending}")).Scan(&pending); err != nil {
				return err
			}
			// What a cut-short run still shows: memory under the backlog.
			if peak, rssHow, err := benchkit.PeakRSS(); err == nil {
				fmt.Fprintf(out, "settle: cut short by --timeout: %d of %d settled in %s\n", stale-pending, stale, f.Timeout)
				fmt.Fprintf(out, "peak_rss_mib=%.1f  (%s, %s, until --timeout)\n", float64(peak)/(1<<20), rssHow, rssSource)
			}
			return fmt.Errorf("settle: %d of %d stale operations still pending after %s", pending, stale, f.Timeout)
		}
		if f.Memprofile != "" {
			heap.sample()
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
	resident := benchkit.ReadResident()
	conns := s.Pool.Stat().TotalConns()
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = daemon.Stop(stopCtx)
	cancel()
	stopped = true
	if err != nil {
		return fmt.Errorf("stop the River client: %w", err)
	}

	settled, err := benchkit.Settled(ctx, monitor, s.Ledger())
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
	res.statementsPerOp = float64(statements) / float64(n)
	requests := s.Providers["sim"].Requests()
	res.requestsPerOp = float64(requests) / float64(n)
	fmt.Fprintf(out, "requests_per_op=%.3f  (%d requests to the sim provider, max_batch %d, ÷ %d settled)\n", res.requestsPerOp, requests, f.MaxBatch, n)
	fmt.Fprintf(out, "statements_per_op=%.3f  (%d statements counted by a pgx QueryTracer/BatchTracer on the pool River and "+
		"sweeper share — BEGIN/COMMIT and River's own included — ÷ %d settled)\n", float64(statements)/float64(n), statements, n)
	for _, st := range counter.Top(10) {
		fmt.Fprintf(out, "  %7.3f/op %s\n", float64(st.Count)/float64(n), st.SQL)
	}
	fmt.Fprintf(out, "peak_rss_mib=%.1f  (%s, %s)\n", res.peakRSSMiB, rssHow, rssSource)
	fmt.Fprintf(out, "  at the end: %s; %d of database.max_conns %d connections open\n", resident, conns, f.MaxConns)
	if f.Cpuprofile != "" {
		fmt.Fprintf(out, "cpu profile: %s (go tool pprof -top %s)\n", f.Cpuprofile, f.Cpuprofile)
	}
	if f.Memprofile != "" {
		if err := heap.write(f.Memprofile); err != nil {
			return err
		}
		fmt.Fprintf(out, "heap profile: %s, taken at the settle phase's highest heap, %.1f MiB of live objects "+
			"(go tool pprof -sample_index=inuse_space -top %s)\n", f.Memprofile, float64(heap.max)/(1<<20), f.Memprofile)
	}
	return nil
}

// heapPeak keeps the heap profile of the moment the heap's objects took the
// most memory, as far as sampling every poll sees it.
type heapPeak struct {
	max     uint64
	profile bytes.Buffer
}

// heapObjects is the runtime/metrics name of the bytes of heap objects,
// live and not yet swept.
const heapObjects = "/memory/classes/heap/objects:bytes"

// sample takes a new profile when the heap has grown a tenth past the
// largest seen so far: a profile costs a few milliseconds, too much for
// every poll.
func (h *heapPeak) sample() {
	m := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	now := m[0].Value.Uint64()
	if now <= h.max+h.max/10 {
		return
	}
	h.max = now
	h.profile.Reset()
	_ = pprof.Lookup("heap").WriteTo(&h.profile, 0)
}

// write writes the kept profile to path, or a profile taken now if the
// heap was never sampled.
func (h *heapPeak) write(path string) error {
	if h.profile.Len() == 0 {
		runtime.GC()
		if err := pprof.Lookup("heap").WriteTo(&h.profile, 0); err != nil {
			return err
		}
	}
	return os.WriteFile(path, h.profile.Bytes(), 0o644)
}

// benchIdle times the stale scan over a ledger with nothing pending, as a
// sweep tick runs it, and prints the plan of its query.
func benchIdle(ctx context.Context, out io.Writer, f Options, s *app.App, monitor *pgx.Conn, res *benchResult) error {
	// After a settle phase the partial index holds the settled rows' dead
	// entries until vacuum; autovacuum would have removed them by the next
	// tick.
	table := s.Ledger()
	if _, err := monitor.Exec(ctx, "VACUUM (ANALYZE) "+table.Name()); err != nil {
		return err
	}
	var rows, pending int
	if err := monitor.QueryRow(ctx, table.SQL(`SELECT count(*), count(*) FILTER (WHERE {c:status} = {w:pending}) FROM {T}`)).Scan(&rows, &pending); err != nil {
		return err
	}
	scanner := s.Scanner()
	ticks := make([]time.Duration, f.IdleTicks)
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
	cutoff := time.Now().Add(-s.Providers["sim"].Limits().StaleAfter)
	planRows, err := monitor.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+table.StalePendingQuery(),
		"sim", cutoff, negInf, int64(0), f.BatchSize)
	if err != nil {
		return err
	}
	plan, err := pgx.CollectRows(planRows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	text := strings.Join(plan, "\n")
	res.idleIndexOnly = strings.Contains(text, "Index") && !strings.Contains(text, "Seq Scan")
	fmt.Fprintf(out, "idle plan (EXPLAIN (ANALYZE, BUFFERS) of the stale scan on %s, provider sim):\n", table.Name())
	for _, line := range plan {
		fmt.Fprintf(out, "  %s\n", line)
	}
	return nil
}

// benchAtSize times, at the ledger's size, what runs on a timer or on a
// person's command besides the sweep: a metrics refresh (every state
// gauge's query), an incident's counts, a look-alike check whose payload
// hash a fiftieth of the history shares; and prints the resident memory.
func benchAtSize(ctx context.Context, out io.Writer, f Options, s *app.App, monitor *pgx.Conn) error {
	names := slices.Sorted(maps.Keys(s.Providers))
	state := app.NewStateCollector(s.Pool, s.Ledger(), names)
	defer state.Close()
	store, tickets := s.Ledger().Store(monitor), review.NewReader(monitor, s.Ledger())
	since := time.Now().Add(-time.Hour)
	for _, m := range []struct {
		name, what string
		run        func() error
	}{
		{"metrics_refresh_ms", "every state gauge's query, on the collector's own connection", func() error { return state.Refresh(ctx) }},
		{"incident_counts_ms", "an incident's settled and pending backlog and tickets opened, since an hour ago", func() error {
			if _, _, err := store.Backlog(ctx, "sim", since, time.Time{}); err != nil {
				return err
			}
			_, err := tickets.OpenedSince(ctx, "sim", since, time.Time{})
			return err
		}},
		{"lookalike_ms", "ledger.Store.Lookalikes for a payload hash a fiftieth of the history shares", func() error {
			_, err := store.Lookalikes(ctx, "sim", benchkit.HistoryHash(7), 0, time.Now(), 24*time.Hour, 24*time.Hour, "customer-7@example.com", false)
			return err
		}},
	} {
		times := make([]time.Duration, f.IdleTicks)
		for i := range times {
			start := time.Now()
			if err := m.run(); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			times[i] = time.Since(start)
		}
		slices.Sort(times)
		fmt.Fprintf(out, "%s=%.3f  (%s; median of %d, min %.3f, max %.3f)\n", m.name, ms(times[len(times)/2]), m.what,
			len(times), ms(times[0]), ms(times[len(times)-1]))
	}
	fmt.Fprintf(out, "resident at the end: %s\n", benchkit.ReadResident())
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchTargets prints each target beside its figure, MET or MISSED.
func benchTargets(out io.Writer, f Options, r benchResult, settled bool) {
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
	case f.Latency == 0:
		fmt.Fprintf(out, "  %s latency 0: settled/s %.1f ≥ 1.0 × River no-op jobs/s %.1f\n",
			verdict(r.settledPerSec >= r.noopPerSec), r.settledPerSec, r.noopPerSec)
	default:
		// The ceiling is the lower of what the provider answers —
		// concurrency requests side by side, each for max_batch operations,
		// one latency each — and what the same settle reaches with no
		// latency at all; the target is 0.8 of it.
		ceiling := float64(f.Concurrency) * float64(f.MaxBatch) / f.Latency.Seconds()
		what := fmt.Sprintf("%d × %d / %.3fs", f.Concurrency, f.MaxBatch, f.Latency.Seconds())
		if f.ZeroRate > 0 && f.ZeroRate < ceiling {
			ceiling, what = f.ZeroRate, fmt.Sprintf("the --latency 0s figure %.1f (below %s)", f.ZeroRate, what)
		}
		want := 0.8 * ceiling
		fmt.Fprintf(out, "  %s latency %s, concurrency %d, max_batch %d: settled/s %.1f ≥ 0.8 × %s = %.1f (%.2f of it)\n",
			verdict(r.settledPerSec >= want), f.Latency, f.Concurrency, f.MaxBatch, r.settledPerSec,
			what, want, r.settledPerSec/ceiling)
	}
	if settled {
		fmt.Fprintf(out, "  %s statements per settled operation %.3f ≤ 0.1\n", verdict(r.statementsPerOp <= 0.1), r.statementsPerOp)
		fmt.Fprintf(out, "  %s provider requests per settled operation %.3f ≤ 0.15 (max_batch %d)\n",
			verdict(r.requestsPerOp <= 0.15), r.requestsPerOp, f.MaxBatch)
	}
	switch {
	case !settled:
		fmt.Fprintln(out, "  n/a    peak RSS: no settle phase")
	case f.RssBaseline > 0:
		growth := r.peakRSSMiB/f.RssBaseline - 1
		fmt.Fprintf(out, "  %s peak RSS %.1f MiB vs --rss-baseline %.1f MiB: growth %+.1f%% < 20%%\n",
			verdict(growth < 0.2), r.peakRSSMiB, f.RssBaseline, 100*growth)
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

// prefixWriter writes to w with prefix at the start of every line.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var buf []byte
	for _, c := range b {
		if !p.midLine {
			buf = append(buf, p.prefix...)
		}
		buf = append(buf, c)
		p.midLine = c != '\n'
	}
	if _, err := p.w.Write(buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// anyPending reports whether any operation is still pending: what the
// settle loops poll. EXISTS, not count(*): counting a large backlog every
// few milliseconds would take a core from the database being measured.
func anyPending(ctx context.Context, monitor *pgx.Conn, table *ledger.Table) (bool, error) {
	var left bool
	err := monitor.QueryRow(ctx, table.SQL("SELECT EXISTS (SELECT 1 FROM {T} WHERE {c:status} = {w:pending})")).Scan(&left)
	return left, err
}
