package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
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
// costs; the event counters count what was done.
func CountJobs(ctx context.Context, db ledger.DB) ([]JobCount, error) {
	rows, err := db.Query(ctx, CountJobsQuery)
	if err != nil {
		return nil, fmt.Errorf("count River's jobs: %w", err)
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[JobCount])
	if err != nil {
		return nil, fmt.Errorf("count River's jobs: %w", err)
	}
	return counts, nil
}

// CountJobsQuery is [CountJobs]' statement: every state but completed,
// named, so that River's index led by the state (its fetching index) is
// read for those states only.
const CountJobsQuery = `SELECT queue, state::text, count(*) FROM sweeper.river_job
	WHERE state IN ('available', 'cancelled', 'discarded', 'pending', 'retryable', 'running', 'scheduled')
	GROUP BY 1, 2`
