package main

import (
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/internal/app"
	"github.com/sweeper/sweeper/migrations"
)

func newMigrateCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate [--status [--json]]",
		Short: "apply River's and sweeper's database migrations (--status lists them)",
		Long: "migrate applies River's migrations and sweeper's own under an advisory lock, so replicas\n" +
			"starting together take turns; running it again changes nothing. --status lists every\n" +
			"version, applied or pending, and changes nothing.",
		Args: noArgs,
	}
	status := cmd.Flags().Bool("status", false, "list applied and pending migrations; change nothing")
	asJSON := jsonFlag(cmd, "with --status: print JSON")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
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

// migrateStatus prints every migration, applied or pending; the counts go
// to stderr.
func migrateStatus(cmd *cobra.Command, e *env, migrator *migrations.Migrator, asJSON bool) error {
	versions, err := migrator.Status(cmd.Context())
	if err != nil {
		return err
	}
	if asJSON {
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
	fmt.Fprintf(e.stderr, "%d applied, %d pending\n", len(versions)-pending, pending)
	return nil
}
