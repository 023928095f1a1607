package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/sweeper/sweeper/config"
)

func runCheckConfig(_ context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "check-config", "check-config [--config FILE]")
	configPath := configFlag(fs)
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	cfg, path, code := loadConfig(e, *configPath)
	if cfg == nil {
		return code
	}
	fmt.Fprintf(e.stdout, "# %s is valid. Effective configuration (defaults applied, secrets masked):\n\n", path)
	if err := cfg.WriteTOML(e.stdout, e.getenv); err != nil {
		fmt.Fprintf(e.stderr, "sweeper check-config: %v\n", err)
		return exitFailure
	}
	writeFireTimes(e.stdout, cfg, time.Now())
	return exitOK
}

// writeFireTimes prints, as TOML comments, each schedule's next three fire
// times after now, in the schedule's own time zone (CRON_TZ, else this
// machine's), so that a person sees what the expression means: across a
// daylight saving change too.
func writeFireTimes(w io.Writer, cfg *config.Config, now time.Time) {
	schedules := []struct{ key, expr string }{
		{"schedules.sweep", cfg.Schedules.Sweep},
		{"schedules.escalate", cfg.Schedules.Escalate},
		{"schedules.notify", cfg.Schedules.Notify},
	}
	width := 0
	for _, s := range schedules {
		width = max(width, len(s.key))
	}
	fmt.Fprintf(w, "\n# Next fire times:\n")
	for _, s := range schedules {
		schedule, err := cron.ParseStandard(s.expr)
		if err != nil {
			continue // the configuration was checked: it parses
		}
		loc := now.Location()
		if spec, ok := schedule.(*cron.SpecSchedule); ok {
			loc = spec.Location // Next answers in the zone it was asked in
		}
		var times []string
		at := now
		for range 3 {
			at = schedule.Next(at)
			times = append(times, at.In(loc).Format("Mon 2006-01-02 15:04:05 MST (-07:00)"))
		}
		fmt.Fprintf(w, "#   %-*s %q: %s\n", width, s.key, s.expr, strings.Join(times, ", "))
	}
}
