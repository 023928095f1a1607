package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/ledger"
)

func newCheckConfigCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "check-config",
		Short: "validate the configuration and print it with secrets masked",
		Long: "check-config validates the configuration and prints it, defaults applied and secrets masked,\n" +
			"where each value comes from (default, file, or the environment variable that set it: every key\n" +
			"can be set by SWEEPER_<SECTION>_<KEY>, SWEEPER_PROVIDERS_<NAME>_<KEY> for a provider block),\n" +
			"and each schedule's next three fire times in its own time zone. Exit 2 lists every problem.",
		Args: noArgs,
		RunE: runE(func(*cobra.Command, []string) error {
			cfg, path, err := loadConfig(e)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "# %s is valid.\n", path)
			for _, w := range cfg.Warnings() {
				fmt.Fprintf(e.stdout, "# warning: %s\n", w)
			}
			fmt.Fprintf(e.stdout, "# Effective configuration (defaults applied, secrets masked):\n\n")
			if err := cfg.WriteTOML(e.stdout, e.getenv); err != nil {
				return err
			}
			writeSources(e.stdout, cfg)
			writeLedgerTable(e.stdout, cfg)
			writeRoutes(e.stdout, cfg)
			writeFireTimes(e.stdout, cfg, time.Now())
			writeSharedAccounts(e.stdout, cfg, e.getenv)
			writeTraces(e.stdout, e.getenv)
			return nil
		}),
	}
}

// writeSources prints, as TOML comments, where each key's value above
// came from: its default, the file, or the environment variable that set
// it (every key can be set by one: config.EnvName).
func writeSources(w io.Writer, cfg *config.Config) {
	keys := cfg.Keys()
	width := 0
	for _, k := range keys {
		width = max(width, len(k))
	}
	fmt.Fprintf(w, "\n# Where each value comes from (default, file, or the environment variable that sets it):\n")
	for _, k := range keys {
		fmt.Fprintf(w, "#   %-*s %s\n", width, k, cfg.Source(k))
	}
}

// writeLedgerTable prints, as a TOML comment, the table that holds the
// operations: ledger.operations, or the table [ledger] adopts with its
// mapping.
func writeLedgerTable(w io.Writer, cfg *config.Config) {
	t := cfg.LedgerTable()
	if t.Native() {
		fmt.Fprintf(w, "\n# ledger table: %s (sweeper's own, made by sweeper migrate)\n", ledger.NativeTable)
		return
	}
	var words []string
	for _, s := range []ledger.Status{ledger.StatusPending, ledger.StatusDone, ledger.StatusReview, ledger.StatusFailed} {
		word, ok := t.Word(s)
		if !ok {
			word = "(none)"
		}
		words = append(words, string(s)+"="+word)
	}
	fmt.Fprintf(w, "\n# ledger table: %s, adopted\n#   status words: %s\n#   check it with: sweeper adopt\n", t, strings.Join(words, ", "))
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

// writeTraces prints, as a TOML comment, whether the standard
// OpenTelemetry variables turn traces on, and where spans go: the
// endpoint without credentials or query (headers are never printed).
func writeTraces(w io.Writer, getenv func(string) string) {
	s := tracing.FromEnv(getenv)
	if s.On {
		fmt.Fprintf(w, "\n# traces: OTLP to %s\n", s.Endpoint)
		return
	}
	fmt.Fprintf(w, "\n# traces: off (%s)\n", s.Off)
}

// writeSharedAccounts prints, as TOML comments, the blocks that reach one
// account as far as the configuration and credentials tell, so that a
// person sees that a record found by one proves no operation of another:
// records are shared across them. Accounts that only a request names
// (Stripe's, Postmark's server) are read when sweeper starts.
func writeSharedAccounts(w io.Writer, cfg *config.Config, getenv func(string) string) {
	shared := cfg.SharedAccounts(getenv)
	if len(shared) == 0 {
		return
	}
	fmt.Fprintf(w, "\n# Blocks that reach one account (their records are shared: one record proves one operation among all their rows):\n")
	for _, g := range shared {
		fmt.Fprintf(w, "#   %s (%s): %s\n", strings.Join(g.Blocks, ", "), g.Kind, g.By)
	}
	fmt.Fprintf(w, "# Stripe accounts and Postmark servers are also read when sweeper starts, and blocks reaching one are shared too.\n")
}

// writeRoutes prints, as TOML comments, the routes in effect: which
// receivers hear of which tickets, the implicit Slack route included.
func writeRoutes(w io.Writer, cfg *config.Config) {
	fmt.Fprintf(w, "\n# Routes (every matching route sends a ticket's events to its receiver; a ticket stays with a receiver it reached)\n")
	n := 0
	for i, r := range cfg.EffectiveRoutes() {
		implicit := ""
		if i >= len(cfg.Routes) {
			if cfg.Slack.Channel == "" {
				continue // Slack is off: its implicit route sends nothing
			}
			implicit = " (implicit: no route names slack)"
		}
		n++
		fmt.Fprintf(w, "#   %d. %s%s\n", n, r, implicit)
	}
	if n == 0 {
		fmt.Fprintf(w, "#   none: Slack is off (no slack.channel) and no route names a receiver\n")
	}
}
