package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/robfig/cron/v3"

	"github.com/sweeper/sweeper/jobs"
)

// uniqueKey is what River compares to find a run already inserted: the
// args for ByArgs, and for ByPeriod the UTC window of the time the job is
// scheduled at (a fire's own time; the start, for a run on start).
func uniqueKey(t *testing.T, args river.JobArgs, opts *river.InsertOpts, scheduled time.Time) string {
	t.Helper()
	u := opts.UniqueOpts
	if !u.ByArgs && u.ByPeriod == 0 {
		t.Fatalf("%T: not unique at all: %+v", args, u)
	}
	key := args.Kind()
	if u.ByArgs {
		key += fmt.Sprintf(" %+v", args)
	}
	if u.ByPeriod > 0 {
		key += " " + scheduled.UTC().Truncate(u.ByPeriod).Format(time.RFC3339)
	}
	return key
}

// TestPeriodicRunsAcrossDST: a periodic job fires at every time its
// schedule names, in the schedule's own time zone, across both daylight
// saving changes of a zone with them and in a zone without: each fire is a
// run of its own (River would skip a run whose key an earlier run holds),
// while a leader that starts between two fires shares the key of the
// fire before (its run-on-start is that period's run, not one more).
// River calls the constructor up to 100 ms before the fire time, or late.
func TestPeriodicRunsAcrossDST(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, expr string
		// from and until bound the simulated days; both DST changes of
		// America/New_York in 2026 are March 8 and November 1.
		from, until string
	}{
		{desc: "daily evening, New York, spring", expr: "CRON_TZ=America/New_York 30 19 * * *", from: "2026-03-01", until: "2026-03-15"},
		{desc: "daily evening, New York, autumn", expr: "CRON_TZ=America/New_York 30 19 * * *", from: "2026-10-25", until: "2026-11-08"},
		{desc: "weekly, New York, spring", expr: "CRON_TZ=America/New_York 30 19 * * 6", from: "2026-02-20", until: "2026-03-25"},
		{desc: "weekly, New York, autumn", expr: "CRON_TZ=America/New_York 0 20 * * 6", from: "2026-10-15", until: "2026-11-20"},
		{desc: "in the skipped and repeated hour, New York", expr: "CRON_TZ=America/New_York 30 1 * * *", from: "2026-03-05", until: "2026-11-05"},
		{desc: "daily, Tokyo (no DST), over New York's spring change", expr: "CRON_TZ=Asia/Tokyo 30 19 * * *", from: "2026-03-01", until: "2026-03-15"},
		{desc: "weekly, Tokyo (no DST), over New York's autumn change", expr: "CRON_TZ=Asia/Tokyo 30 9 * * 0", from: "2026-10-15", until: "2026-11-20"},
		{desc: "every five minutes, New York", expr: "CRON_TZ=America/New_York */5 * * * *", from: "2026-11-01", until: "2026-11-02"},
		{desc: "every 30s", expr: "@every 30s", from: "2026-03-08", until: "2026-03-08T02:00:00Z"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			schedule, err := cron.ParseStandard(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			from, until := day(t, tc.from), day(t, tc.until)
			seen := map[string]time.Time{}
			fires := 0
			// As River's enqueuer does: the next run from the last one's
			// scheduled time.
			for fire := schedule.Next(from); fire.Before(until); fire = schedule.Next(fire) {
				fires++
				var key string
				for i, at := range []time.Time{fire.Add(-100 * time.Millisecond), fire, fire.Add(time.Second), fire.Add(5 * time.Second)} {
					args, opts := jobs.PeriodicRun(jobs.SweepArgs{}, schedule, at)
					k := uniqueKey(t, args, opts, fire)
					if i == 0 {
						key = k
					} else if k != key {
						t.Fatalf("the fire at %s has key %s when enqueued at %s, %s at %s", fire, key, at, k, fire.Add(-100*time.Millisecond))
					}
				}
				if earlier, ok := seen[key]; ok {
					t.Fatalf("the fire at %s shares key %q with the fire at %s: River would skip it", fire, key, earlier)
				}
				seen[key] = fire
				// A leader starting halfway to the next fire runs on start: the
				// run of this period, not one more.
				next := schedule.Next(fire)
				mid := fire.Add(next.Sub(fire) / 2)
				if args, opts := jobs.PeriodicRun(jobs.SweepArgs{}, schedule, mid); uniqueKey(t, args, opts, mid) != key {
					t.Errorf("a start at %s has key %q, not that of the fire before it (%q)", mid, uniqueKey(t, args, opts, mid), key)
				}
			}
			if fires == 0 {
				t.Fatal("no fire in the range")
			}
		})
	}
}

func day(t *testing.T, s string) time.Time {
	t.Helper()
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if d, err := time.Parse(layout, s); err == nil {
			return d
		}
	}
	t.Fatalf("bad date %q", s)
	return time.Time{}
}
