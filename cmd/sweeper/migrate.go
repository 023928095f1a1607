package main

import (
	"context"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/sweeper/sweeper/internal/app"
	"github.com/sweeper/sweeper/migrations"
)

func runMigrate(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "migrate", "migrate [--config FILE] [--status [--json]]")
	configPath := configFlag(fs)
	status := fs.Bool("status", false, "list applied and pending migrations; change nothing")
	asJSON := fs.Bool("json", false, "with --status: print JSON")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	cfg, _, code := loadConfigNoLookups(e, *configPath)
	if cfg == nil {
		return code
	}
	pool, err := app.Connect(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper migrate: %v\n", err)
		return exitFailure
	}
	defer pool.Close()
	// The command says what it applied; River's migrator would say it
	// again, as log lines: only its warnings are shown.
	migrator := migrations.New(pool, newLoggerAt(e.stderr, slog.LevelWarn))

	if *status {
		versions, err := migrator.Status(ctx)
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper migrate: %v\n", err)
			return exitFailure
		}
		if *asJSON {
			return printJSON(e, versions)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "COMPONENT\tVERSION\tNAME\tSTATE\tAPPLIED AT")
		pending := 0
		for _, v := range versions {
			state, at := "applied", ""
			if !v.Applied {
				state = "pending"
				pending++
			} else if !v.AppliedAt.IsZero() {
				at = v.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", v.Component, v.Version, v.Name, state, at)
		}
		tw.Flush()
		fmt.Fprintf(e.stdout, "%d applied, %d pending\n", len(versions)-pending, pending)
		return exitOK
	}

	applied, err := migrator.Up(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper migrate: %v\n", err)
		return exitFailure
	}
	if len(applied) == 0 {
		fmt.Fprintln(e.stdout, "database is current: nothing to apply")
		return exitOK
	}
	for _, v := range applied {
		fmt.Fprintf(e.stdout, "applied %s %d %s\n", v.Component, v.Version, v.Name)
	}
	fmt.Fprintf(e.stdout, "%d migration(s) applied\n", len(applied))
	return exitOK
}
