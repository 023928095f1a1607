package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
)

// adoptReport is what `sweeper adopt --json` prints.
type adoptReport struct {
	// Native: the configuration names ledger.operations; nothing to adopt.
	Native bool `json:"native"`
	// Ledger is the configured table and its mapping, in one line.
	Ledger     string             `json:"ledger"`
	Inspection *ledger.Inspection `json:"inspection,omitempty"`
	// Applied are the migrations --apply ran.
	Applied []migrations.Version `json:"applied,omitempty"`
	// GuardsInstalled / GuardsRemoved: what --guards or --remove-guards did.
	GuardsInstalled bool `json:"guards_installed,omitempty"`
	GuardsRemoved   bool `json:"guards_removed,omitempty"`
}

func newAdoptCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adopt [--apply [--guards]] [--remove-guards] [--json]",
		Short: "check the table [ledger] adopts (columns, types, keys, indexes, status words, guards) and say whether sweeper can run on it",
		Long: "adopt inspects the table the configuration's [ledger] section names in place of ledger.operations,\n" +
			"before anything runs: each mapped column and its type, the unique keys sweeper needs, the indexes\n" +
			"its reads need (with the CREATE INDEX CONCURRENTLY statement for each one missing: sweeper never\n" +
			"creates an index on the table), the columns the table lacks and what each costs, status words the\n" +
			"mapping does not name, and whether sweeper's guards are installed. Then the verdict: usable or\n" +
			"refused (exit 1), with the reasons. It changes nothing unless told to:\n" +
			"  --apply           when usable, apply sweeper's migrations (its own tables, in its own schema)\n" +
			"  --guards          with --apply, put sweeper's guard triggers on the table: the rules\n" +
			"                    ledger.operations enforces on whoever writes (forward-only statuses, a record\n" +
			"                    is final and proves one operation, review only by sweeper, no delete of a\n" +
			"                    row with an open ticket)\n" +
			"  --remove-guards   take sweeper's guard triggers off the table\n" +
			"On ledger.operations there is nothing to adopt.",
		Args: noArgs,
	}
	apply := cmd.Flags().Bool("apply", false, "when the table is usable, apply sweeper's migrations")
	guards := cmd.Flags().Bool("guards", false, "with --apply: install sweeper's guard triggers on the table")
	remove := cmd.Flags().Bool("remove-guards", false, "remove sweeper's guard triggers from the table; nothing else")
	asJSON := jsonFlag(cmd, "print JSON")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		switch {
		case *guards && !*apply:
			return usagef("--guards installs with --apply: sweeper adopt --apply --guards")
		case *remove && (*apply || *guards):
			return usagef("--remove-guards is a command of its own: not with --apply or --guards")
		}
		cfg, _, err := loadConfigFor(e, uses{})
		if err != nil {
			return err
		}
		t := cfg.LedgerTable()
		report := adoptReport{Native: t.Native(), Ledger: t.String()}
		if t.Native() {
			if *asJSON {
				return printJSON(e, report)
			}
			fmt.Fprintf(e.stdout, "ledger.table is %s, sweeper's own table (sweeper migrate creates it): nothing to adopt.\n"+
				"To run on a table the workflows already write, name it in [ledger] (table, columns, status_values).\n", ledger.NativeTable)
			if *apply || *remove {
				fmt.Fprintf(e.stdout, "Nothing applied: %s has its own guards.\n", ledger.NativeTable)
			}
			return nil
		}
		ctx := cmd.Context()
		pool, err := app.Connect(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()

		if *remove {
			if err := ledger.RemoveGuards(ctx, pool, t); err != nil {
				return err
			}
			report.GuardsRemoved = true
			if *asJSON {
				return printJSON(e, report)
			}
			fmt.Fprintf(e.stdout, "removed sweeper's guards from %s (%s)\n", t.Name(), strings.Join(ledger.GuardTriggers, ", "))
			return nil
		}

		in, err := ledger.Inspect(ctx, pool, t)
		if err != nil {
			return err
		}
		report.Inspection = &in
		if !*asJSON {
			in.Write(e.stdout, t)
		}
		if !in.Usable {
			if *asJSON {
				if err := printJSON(e, report); err != nil {
					return err
				}
			} else if *apply {
				fmt.Fprintln(e.stdout, "Nothing applied: the table is refused.")
			}
			return exited(exitFailure)
		}
		if *apply {
			migrator := migrations.New(pool, configuredLogger(e.stderr, cfg.Log, slog.LevelWarn))
			report.Applied, err = migrator.Up(ctx)
			if err != nil {
				return err
			}
			if !*asJSON {
				for _, v := range report.Applied {
					fmt.Fprintf(e.stdout, "applied %s %d %s\n", v.Component, v.Version, v.Name)
				}
				fmt.Fprintf(e.stdout, "%d migration(s) applied: sweeper's own tables are in schema sweeper; %s is not changed\n", len(report.Applied), t.Name())
			}
			if *guards {
				if err := ledger.InstallGuards(ctx, pool, t); err != nil {
					return err
				}
				report.GuardsInstalled = true
				if !*asJSON {
					fmt.Fprintf(e.stdout, "installed sweeper's guards on %s (%s)\n", t.Name(), strings.Join(ledger.GuardTriggers, ", "))
				}
			}
		}
		if *asJSON {
			return printJSON(e, report)
		}
		return nil
	})
	return cmd
}
