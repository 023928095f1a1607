package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/tools/bench"
)

func newBenchCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench [--ops N] [--history N] [--stale F] [--latency D] [--concurrency C] [flags]",
		Short: "measure settle throughput, latency, statements, memory and the idle scan on a scratch database",
		Long: "bench creates a database sweeper_bench_<random> (on $SWEEPER_DATABASE_URL's server, else 127.0.0.1:5432, else a\n" +
			"throwaway cluster), fills ledger.operations (after --history settled rows), runs the real sweep and lookup jobs\n" +
			"over the sim provider until every stale row is settled, times River alone on no-op jobs with as many workers,\n" +
			"measures an idle sweep tick, a metrics refresh, an incident's counts and a look-alike check at the ledger's size,\n" +
			"writes the same outcomes for as many operations again as bare set-based SQL (the floor), prints the figures\n" +
			"beside their targets, and drops the database. The last lines are ratio_vs_floor=<settled/s ÷ floor/s> and\n" +
			"ratio_vs_river=<settled/s ÷ River no-op jobs/s> (not printed with --stale 0, which measures the idle tick only).",
		Args: noArgs,
	}
	f := bench.Options{Stdout: e.stdout, Stderr: e.stderr, Getenv: e.getenv}
	fs := cmd.Flags()
	fs.IntVar(&f.Ops, "ops", 10000, "rows in ledger.operations (besides --history)")
	fs.IntVar(&f.History, "history", 0, "settled rows (done and failed, months old) written first, as the bulk of a real ledger;\nthe idle tick, metrics refresh, incident counts and look-alike check are then timed at that size")
	fs.IntVar(&f.Replicas, "replicas", 0, "settle with this many daemons, each a process of its own, on the one database, and check that\nno work was done twice (0: the jobs run in this process, as before)")
	fs.StringVar(&f.WorkerDB, "worker-db", "", "run as one replica of a --replicas run on this database (internal)")
	_ = fs.MarkHidden("worker-db")
	fs.Float64Var(&f.Stale, "stale", 1.0, "fraction of the rows that are stale pending (0–1); the rest are done")
	fs.DurationVar(&f.Latency, "latency", 0, "sim provider latency per lookup")
	fs.IntVar(&f.Concurrency, "concurrency", 100, "river.max_workers and the provider's concurrency (1–1000)")
	fs.IntVar(&f.BatchSize, "batch", 500, "sweep.batch_size: rows per page of the stale scan (1–10000)")
	fs.IntVar(&f.MaxBatch, "max-batch", 100, "the sim provider's max_batch: operations answered per request (1–1000)")
	fs.Float64Var(&f.ZeroRate, "zero-rate", 0, "settled/s of a --latency 0s run, which caps the target of a run with latency\n(default: measured first, in a scratch database of its own)")
	fs.IntVar(&f.MaxConns, "max-conns", 20, "database.max_conns: the pool River and sweeper share")
	fs.IntVar(&f.RiverJobs, "river-jobs", 0, "no-op jobs for River's own throughput (default max(1000, 50 × concurrency))")
	fs.IntVar(&f.IdleTicks, "idle-ticks", 9, "idle sweep ticks to time (the median is reported)")
	fs.Float64Var(&f.RssBaseline, "rss-baseline", 0, "peak RSS in MiB of a --ops 10000 run, to check the memory target against")
	fs.DurationVar(&f.Timeout, "timeout", 30*time.Minute, "give up when the stale rows are not all settled within this")
	fs.StringVar(&f.Cpuprofile, "cpuprofile", "", "write a CPU profile of the settle phase to this file")
	fs.StringVar(&f.Memprofile, "memprofile", "", "write a heap profile, taken at the settle phase's highest heap, to this file")
	fs.BoolVar(&f.Keep, "keep", false, "keep the database instead of dropping it")
	fs.BoolVar(&f.Adopted, "adopted", false, "settle a table of the workflows' own (public.outbound_log: other names, other status words),\nmapped in [ledger], instead of ledger.operations")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if err := f.Validate(); err != nil {
			return usageError{err.Error()}
		}
		if f.WorkerDB != "" {
			return bench.RunWorker(cmd.Context(), f, e.stdin)
		}
		return bench.Run(cmd.Context(), f)
	})
	noConfig(cmd)
	return cmd
}
