package benchkit

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/sweeper/sweeper/jobs"
)

// NoopArgs is a job that does nothing: what River alone costs per job.
type NoopArgs struct{}

// Kind implements river.JobArgs.
func (NoopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[NoopArgs]
	done atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[NoopArgs]) error {
	w.done.Add(1)
	return nil
}

// NoopResult is one run of [RiverNoop].
type NoopResult struct {
	Jobs    int
	Elapsed time.Duration
}

// PerSecond is the run's throughput.
func (r NoopResult) PerSecond() float64 { return float64(r.Jobs) / r.Elapsed.Seconds() }

// RiverNoop migrates River into schema (created if missing) of the
// database pool connects to, inserts n no-op jobs with InsertMany, then
// starts a client with workers workers and River's default fetch settings,
// and times it from its start until every job is completed in the
// database.
func RiverNoop(ctx context.Context, pool *pgxpool.Pool, schema string, workers, n int) (NoopResult, error) {
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return NoopResult{}, err
	}
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return NoopResult{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return NoopResult{}, fmt.Errorf("river no-op: migrate: %w", err)
	}
	w := &noopWorker{}
	workersSet := river.NewWorkers()
	river.AddWorker(workersSet, w)
	client, err := river.NewClient(driver, &river.Config{
		Schema:  schema,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers: workersSet,
		// As sweeper's own client fetches, so the two are compared on equal
		// terms.
		FetchCooldown: jobs.FetchCooldown,
	})
	if err != nil {
		return NoopResult{}, err
	}
	const chunk = 5000
	for inserted := 0; inserted < n; inserted += chunk {
		params := make([]river.InsertManyParams, min(chunk, n-inserted))
		for i := range params {
			params[i] = river.InsertManyParams{Args: NoopArgs{}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return NoopResult{}, fmt.Errorf("river no-op: insert: %w", err)
		}
	}

	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return NoopResult{}, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()
	// The workers' count says when the last job has run; River marks jobs
	// completed in batches shortly after, and that is when the run ends.
	countSQL := "SELECT count(*) FROM " + pgx.Identifier{schema, "river_job"}.Sanitize() + " WHERE state <> 'completed'"
	for {
		if err := ctx.Err(); err != nil {
			return NoopResult{}, err
		}
		if w.done.Load() >= int64(n) {
			var left int
			if err := pool.QueryRow(ctx, countSQL).Scan(&left); err != nil {
				return NoopResult{}, err
			}
			if left == 0 {
				return NoopResult{Jobs: n, Elapsed: time.Since(start)}, nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}
