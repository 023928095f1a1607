package main

import (
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/migrations"
)

func newMigrateCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate [--status [--json] | --down N]",
		Short: "apply River's and sweeper's database migrations (--status lists them, --down N rolls back)",
		Long: "migrate applies River's migrations and sweeper's own under an advisory lock, so replicas\n" +
			"starting together take turns; running it again changes nothing. --status lists every\n" +
			"version, applied, pending or unknown to this binary, and changes nothing; it exits 0 when\n" +
			"the database is current, 3 when migrations are pending, 4 when the database is ahead of\n" +
			"this binary (a newer sweeper migrated it). --down N rolls back sweeper's last N migrations\n" +
			"(never River's), newest first; a database ahead of this binary is refused by both.",
		Args: noArgs,
	}
	status := cmd.Flags().Bool("status", false, "list applied, pending and unknown migrations; change nothing (exit 3: pending, 4: database ahead)")
	asJSON := jsonFlag(cmd, "with --status: print JSON")
	down := cmd.Flags().Int("down", 0, "roll back sweeper's last N migrations, newest first")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		switch {
		case cmd.Flags().Changed("down") && *status:
			return usagef("--down and --status do not go together")
		case cmd.Flags().Changed("down") && *down < 1:
			return usagef("--down takes how many migrations to roll back, at least 1, not %d", *down)
		}
		cfg, _, err := loadConfigFor(e, uses{})
		if err != nil {
			return err
		}
		pool, err := app.Connect(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		// The command says what it applied; River's migrator would say it
		// again, as log lines: only its warnings are shown.
		migrator := migrations.New(pool, configuredLogger(e.stderr, cfg.Log, slog.LevelWarn))
		if *status {
			return migrateStatus(cmd, e, migrator, *asJSON)
		}
		if *down > 0 {
			done, err := migrator.Down(cmd.Context(), *down)
			for _, v := range done {
				fmt.Fprintf(e.stdout, "rolled back %s %d %s\n", v.Component, v.Version, v.Name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%d migration(s) rolled back; sweeper migrate applies them again\n", len(done))
			return nil
		}
		applied, err := migrator.Up(cmd.Context())
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			fmt.Fprintln(e.stdout, "database is current: nothing to apply")
			return nil
		}
		for _, v := range applied {
			fmt.Fprintf(e.stdout, "applied %s %d %s\n", v.Component, v.Version, v.Name)
		}
		fmt.Fprintf(e.stdout, "%d migration(s) applied\n", len(applied))
		return nil
	})
	return cmd
}

// migrateStatus prints every migration, applied, pending or unknown to
// this binary; the counts go to stderr. Its exit code says whether the
// database is current (statusCode).
func migrateStatus(cmd *cobra.Command, e *env, migrator *migrations.Migrator, asJSON bool) error {
	versions, err := migrator.Status(cmd.Context())
	if err != nil {
		return err
	}
	count := migrations.Counts(versions)
	if asJSON {
		if err := printJSON(e, versions); err != nil {
			return err
		}
		return exited(statusCode(count))
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tVERSION\tNAME\tSTATE\tAPPLIED AT")
	for _, v := range versions {
		state, at, name := "applied", "", v.Name
		switch {
		case v.Unknown:
			state, name = "unknown", "(not in this binary)"
		case !v.Applied:
			state = "pending"
		}
		if v.Applied && !v.AppliedAt.IsZero() {
			at = v.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", v.Component, v.Version, name, state, at)
	}
	tw.Flush()
	fmt.Fprintf(e.stderr, "%d applied, %d pending\n", count.Applied, count.Pending)
	if count.Unknown > 0 {
		fmt.Fprintf(e.stderr, "the database is ahead of this binary: %d migration(s) applied that it does not know "+
			"(a newer sweeper migrated it); run that sweeper, or roll back with its migrate --down\n", count.Unknown)
	}
	return exited(statusCode(count))
}

// statusCode is migrate --status's exit code for count: exitAhead when
// the database has migrations this binary does not know, else exitPending
// when some are to apply, else exitOK.
func statusCode(count migrations.Count) int {
	switch {
	case count.Unknown > 0:
		return exitAhead
	case count.Pending > 0:
		return exitPending
	}
	return exitOK
}
