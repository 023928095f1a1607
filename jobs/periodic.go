package jobs

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/robfig/cron/v3"
)

// FetchCooldown is the River client's pause between fetches. River fetches
// at most a queue's free slots per fetch, so its default of 100 ms caps a
// process at max_workers×10 lookups a second however fast the provider
// answers; 10 ms moves that cap past what the database settles and keeps a
// 50 ms lookup from waiting on the fetch loop. An idle queue is still
// polled only every FetchPollInterval.
const FetchCooldown = 10 * time.Millisecond

// PeriodicArgs are the args of a periodic job (SweepArgs, EscalateArgs,
// NotifyArgs): forRun names one run.
type PeriodicArgs interface {
	river.JobArgs
	// forRun returns the args of the run whose period ends at nextFire.
	forRun(nextFire time.Time) river.JobArgs
}

// fireSlack is how early River may enqueue a periodic run (it fires what
// is due within 100 ms), rounded up to the second cron works in.
const fireSlack = time.Second

// periodicRun returns the args and insert options of the run of a periodic
// job on schedule that River enqueues at now: at one of the schedule's fire
// times, or at start. A run is unique by the end of its period, the
// schedule's next fire time after now, read in the schedule's own time
// zone (CRON_TZ): every fire is a run of its own whatever daylight saving
// does, and a run on start shares its key with the fire before it, so a
// restart or a new leader does not add one. (River's unique-by-period
// windows are UTC: with CRON_TZ, the run after a daylight saving change
// could fall in the previous run's window and be skipped.) An "@every"
// schedule keeps windows of its interval: it has no time zone.
func periodicRun(args PeriodicArgs, schedule cron.Schedule, now time.Time) (river.JobArgs, *river.InsertOpts) {
	if every, ok := schedule.(cron.ConstantDelaySchedule); ok {
		return args, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: max(every.Delay, time.Second)}}
	}
	next := schedule.Next(now.Add(fireSlack)).UTC()
	return args.forRun(next), &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// NewPeriodicJob returns the periodic job id, running args on schedule, also
// on start. now is the clock its runs are named by (see periodicRun): this
// machine's, by which River fires them, or a test's.
func NewPeriodicJob(id string, schedule cron.Schedule, args PeriodicArgs, now func() time.Time) *river.PeriodicJob {
	return river.NewPeriodicJob(schedule, func() (river.JobArgs, *river.InsertOpts) {
		return periodicRun(args, schedule, now())
	}, &river.PeriodicJobOpts{ID: id, RunOnStart: true})
}

// uniqueWhileUnfinished makes a job unique by its arguments while one with
// the same arguments is unfinished — the states lookup claims also count as
// holding their operations (claims.go) — so a second scan adds nothing,
// and once it has finished a later scan may ask again.
var uniqueWhileUnfinished = river.UniqueOpts{
	ByArgs: true,
	ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	},
}
