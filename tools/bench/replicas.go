package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/providers/kinds"
	"github.com/sweeper/sweeper/tools/benchkit"
)

// WorkerReport is what one replica process of `sweeper bench --replicas`
// did, printed as one JSON line on its standard output when it stops.
type WorkerReport struct {
	// Statements counts the SQL statements its pool sent.
	Statements int64 `json:"statements"`
	// Lookups counts the operations it asked the provider about;
	// Settled the operations whose outcome it wrote.
	Lookups float64 `json:"lookups"`
	Settled float64 `json:"settled"`
}

// workerReady is the line a replica prints once its River client runs.
const workerReady = "ready"

// RunWorker is one replica of `sweeper bench --replicas`: the real daemon
// (River client with sweeper's workers, no periodic jobs) on f's database
// URL (WorkerDB), with the bench's configuration, until its standard input
// closes; then it stops and prints its [WorkerReport].
func RunWorker(ctx context.Context, f Options, stdin io.Reader) error {
	noEnv := func(string) string { return "" }
	cfg, err := config.Parse(benchConfig(f, f.WorkerDB), kinds.All(), noEnv)
	if err != nil {
		return fmt.Errorf("bench configuration: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(f.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	provs, err := app.BuildProviders(cfg, kinds.All(), noEnv, logger)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, []string{"sim"})
	if err != nil {
		return err
	}
	for _, p := range provs {
		p.SetMetrics(m)
		defer p.Close()
	}
	counter := &benchkit.StatementCounter{}
	pool, err := benchPool(ctx, f.WorkerDB, int32(f.MaxConns), counter)
	if err != nil {
		return err
	}
	defer pool.Close()
	s := &app.App{Config: cfg, Pool: pool, Providers: provs, Logger: logger, Metrics: m}
	daemon, err := s.NewDaemon(app.ClientOptions{NoPeriodic: true})
	if err != nil {
		return err
	}
	counter.Start()
	if err := daemon.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintln(f.Stdout, workerReady)
	_, _ = io.Copy(io.Discard, stdin) // until the parent closes it
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := daemon.Stop(stopCtx); err != nil {
		return err
	}
	rep := WorkerReport{Statements: int64(counter.Stop())}
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range families {
		for _, metric := range mf.GetMetric() {
			switch mf.GetName() {
			case "sweeper_lookup_duration_seconds":
				rep.Lookups += float64(metric.GetHistogram().GetSampleCount())
			case "sweeper_operations_settled_total":
				rep.Settled += metric.GetCounter().GetValue()
			}
		}
	}
	return json.NewEncoder(f.Stdout).Encode(rep)
}

// worker is a replica process the parent runs.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	report WorkerReport
}

// benchReplicas settles the stale rows with f.Replicas daemon processes on
// one database, and checks that no work was done twice.
func benchReplicas(ctx context.Context, out io.Writer, f Options, s *app.App, dbURL string, monitor *pgx.Conn, stale int, res *benchResult) (err error) {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var workers []*worker
	defer func() {
		for _, w := range workers {
			if w.cmd.ProcessState == nil {
				_ = w.stdin.Close()
				_ = w.cmd.Process.Kill()
				_ = w.cmd.Wait()
			}
		}
	}()
	// Each replica's pool gets the connections one process would have,
	// so K replicas hold K pools, as K daemons would.
	for i := range f.Replicas {
		cmd := exec.CommandContext(ctx, exe, "bench", "--worker-db", dbURL,
			"--concurrency", fmt.Sprint(f.Concurrency), "--batch", fmt.Sprint(f.BatchSize),
			"--max-batch", fmt.Sprint(f.MaxBatch), "--latency", f.Latency.String(), "--max-conns", fmt.Sprint(f.MaxConns),
			fmt.Sprintf("--adopted=%t", f.Adopted))
		cmd.Stderr = &prefixWriter{w: f.Stderr, prefix: fmt.Sprintf("replica %d: ", i+1)}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		w := &worker{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
		workers = append(workers, w)
		if !w.lines.Scan() || w.lines.Text() != workerReady {
			return fmt.Errorf("replica %d did not start: %q", i+1, w.lines.Text())
		}
	}
	// The sweep job is inserted by an insert-only client: the replicas
	// work it.
	inserter, err := s.NewDaemon(app.ClientOptions{NoPeriodic: true})
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := inserter.Client.Insert(ctx, jobs.SweepArgs{}, nil); err != nil {
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
			return fmt.Errorf("settle with %d replicas: stale operations still pending after %s", f.Replicas, f.Timeout)
		}
		time.Sleep(25 * time.Millisecond)
	}
	elapsed := time.Since(start)
	var total WorkerReport
	for i, w := range workers {
		if err := w.stdin.Close(); err != nil {
			return err
		}
		if !w.lines.Scan() {
			return fmt.Errorf("replica %d: no report: %v", i+1, w.lines.Err())
		}
		if err := json.Unmarshal(w.lines.Bytes(), &w.report); err != nil {
			return fmt.Errorf("replica %d: report %q: %w", i+1, w.lines.Text(), err)
		}
		if err := w.cmd.Wait(); err != nil {
			return fmt.Errorf("replica %d: %w", i+1, err)
		}
		total.Statements += w.report.Statements
		total.Lookups += w.report.Lookups
		total.Settled += w.report.Settled
	}
	settled, err := benchkit.Settled(ctx, monitor, s.Ledger())
	if err != nil {
		return err
	}
	n := settled.Done + settled.Review
	dup, err := benchkit.Duplicates(ctx, monitor)
	if err != nil {
		return err
	}
	res.settledPerSec = float64(n) / elapsed.Seconds()
	res.statementsPerOp = float64(total.Statements) / float64(n)
	fmt.Fprintf(out, "settle: %d operations settled (%d done, %d review) by %d replicas (processes) in %s\n",
		n, settled.Done, settled.Review, f.Replicas, elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "settled_per_sec=%.1f\n", res.settledPerSec)
	fmt.Fprintf(out, "statements_per_op=%.3f  (%d statements of every replica's pool ÷ %d settled)\n", res.statementsPerOp, total.Statements, n)
	for i, w := range workers {
		fmt.Fprintf(out, "  replica %d: %.0f operations looked up, %.0f outcomes written, %d statements\n",
			i+1, w.report.Lookups, w.report.Settled, w.report.Statements)
	}
	lookedTwice := int(total.Lookups) - n
	writtenTwice := int(total.Settled) - n + dup.Events + dup.Outbox
	fmt.Fprintf(out, "duplicate work: lookups_asked_twice=%d (operations looked up %.0f − settled %d), operations_handed_on_twice=%d, "+
		"records_written_twice=%d (outcomes written %.0f − settled %d, + %d opened events and %d outbox rows beyond one each)\n",
		lookedTwice, total.Lookups, n, dup.HandedOn, writtenTwice, total.Settled, n, dup.Events, dup.Outbox)
	if n != stale {
		return fmt.Errorf("%d of %d stale operations settled", n, stale)
	}
	if lookedTwice != 0 || writtenTwice != 0 || dup.HandedOn != 0 {
		return errors.New("replicas did work twice")
	}
	return nil
}
