package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/sweeper/sweeper/ledger"
)

// JobCount is how many of River's jobs in Queue are in State.
type JobCount struct {
	Queue string
	State rivertype.JobState
	Count int64
}

// CountJobs counts River's jobs by queue and state, in one statement: the
// depth of a queue is its available, scheduled and retryable jobs.
// Completed jobs are left out: they are history River keeps for a day, as
// many as were settled, and counting them would cost what that history
// costs; the event counters count what was done. The queue-depth states
// (available, scheduled, retryable, running) of sweeper's queues are
// reported even when empty, so that an idle queue reads 0, not nothing.
func CountJobs(ctx context.Context, db ledger.DB) ([]JobCount, error) {
	rows, err := db.Query(ctx, CountJobsQuery)
	if err != nil {
		return nil, fmt.Errorf("count River's jobs: %w", err)
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[JobCount])
	if err != nil {
		return nil, fmt.Errorf("count River's jobs: %w", err)
	}
	seen := map[[2]string]bool{}
	for _, c := range counts {
		seen[[2]string{c.Queue, string(c.State)}] = true
	}
	for _, q := range []string{river.QueueDefault, QueueLookup, QueueNotify} {
		for _, st := range []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateScheduled,
			rivertype.JobStateRetryable, rivertype.JobStateRunning} {
			if !seen[[2]string{q, string(st)}] {
				counts = append(counts, JobCount{Queue: q, State: st})
			}
		}
	}
	return counts, nil
}

// CountJobsQuery is [CountJobs]' statement: every state but completed,
// named, so that River's index led by the state (its fetching index) is
// read for those states only.
const CountJobsQuery = `SELECT queue, state::text, count(*) FROM sweeper.river_job
	WHERE state IN ('available', 'cancelled', 'discarded', 'pending', 'retryable', 'running', 'scheduled')
	GROUP BY 1, 2`
