package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/internal/app"
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
			writeInspection(e.stdout, t, in)
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

// writeInspection prints an inspection for a person: every check, then
// the verdict.
func writeInspection(w io.Writer, t *ledger.Table, in ledger.Inspection) {
	fmt.Fprintf(w, "Adopting %s", t.Name())
	if in.Kind != "" {
		fmt.Fprintf(w, " (%s)", in.Kind)
	}
	fmt.Fprintln(w)
	if !in.Exists {
		writeVerdict(w, in)
		return
	}

	fmt.Fprintf(w, "\nColumns (sweeper's name = the table's column, its type):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range in.Columns {
		state := "ok"
		switch {
		case !c.Found:
			state = "MISSING"
		case !c.TypeOK:
			state = "WRONG"
		case c.Problem != "":
			state = "NULLABLE" // a required column that allows NULL
		}
		typ := c.Type
		if typ == "" {
			typ = "-"
		}
		req := ""
		if c.Required {
			req = "required"
		}
		fmt.Fprintf(tw, "  %s\t%s\t= %s\t%s\t%s\n", state, c.Key, c.Column, typ, req)
	}
	tw.Flush()
	for _, c := range in.Columns {
		if c.Problem != "" {
			fmt.Fprintf(w, "  %s (%s): %s\n", c.Key, c.Column, c.Problem)
		}
	}

	if len(in.Absent) > 0 {
		fmt.Fprintf(w, "\nColumns the table does not have (what sweeper reads instead, and what it costs):\n")
		for _, a := range in.Absent {
			fmt.Fprintf(w, "  %s: %s\n", a.Key, a.Cost)
		}
	}

	if len(in.Keys) > 0 {
		fmt.Fprintf(w, "\nUnique keys:\n")
		for _, k := range in.Keys {
			switch {
			case k.By != "":
				fmt.Fprintf(w, "  ok       %s: %s\n", k.Purpose, k.By)
			case k.Required:
				fmt.Fprintf(w, "  MISSING  %s (required)\n           %s\n", k.Purpose, k.Create)
			default:
				fmt.Fprintf(w, "  missing  %s: without it only sweeper's guards hold it\n           %s\n", k.Purpose, k.Create)
			}
		}
	}

	if len(in.Indexes) > 0 {
		fmt.Fprintf(w, "\nIndexes sweeper's reads need (sweeper never creates them; a missing one makes its read scan the table):\n")
		for _, ix := range in.Indexes {
			switch {
			case ix.Served():
				fmt.Fprintf(w, "  ok       %s %s: served by %s\n", ix.Purpose, ix.Want, strings.Join(ix.By, ", "))
			case ix.Problem != "":
				fmt.Fprintf(w, "  ?        %s %s: %s\n", ix.Purpose, ix.Want, ix.Problem)
			default:
				fmt.Fprintf(w, "  missing  %s %s\n           %s\n", ix.Purpose, ix.Want, ix.Create)
			}
		}
	}

	var words []string
	for _, s := range []ledger.Status{ledger.StatusPending, ledger.StatusDone, ledger.StatusReview, ledger.StatusFailed} {
		if word, ok := t.Word(s); ok {
			words = append(words, fmt.Sprintf("%s = %q", s, word))
		} else {
			words = append(words, fmt.Sprintf("%s: none (no resolution may mark an operation failed)", s))
		}
	}
	fmt.Fprintf(w, "\nStatus words: %s\n", strings.Join(words, ", "))
	if in.WordsFrom != "" {
		from := map[string]string{
			"data":       "read from the rows",
			"statistics": "read from pg_stats: the rows took too long to scan, rare words may be missing",
			"enum":       "the labels of the column's enum",
		}[in.WordsFrom]
		if len(in.UnnamedWords) == 0 {
			fmt.Fprintf(w, "  words the mapping does not name (%s): none\n", from)
		} else {
			fmt.Fprintf(w, "  words the mapping does not name (%s): %s: sweeper leaves such rows alone\n", from, quoteAll(in.UnnamedWords))
		}
	}

	fmt.Fprintf(w, "\nGuards (sweeper adopt --apply --guards):")
	if in.GuardsInstalled() {
		fmt.Fprintf(w, " installed\n")
	} else {
		var have []string
		for _, g := range in.Guards {
			if g.Installed {
				have = append(have, g.Trigger)
			}
		}
		if len(have) == 0 {
			fmt.Fprintf(w, " not installed: sweeper's own writes keep its rules; a workflow's or a person's write to the table is not checked\n")
		} else {
			fmt.Fprintf(w, " partly installed (%s): run sweeper adopt --apply --guards again\n", strings.Join(have, ", "))
		}
	}
	writeVerdict(w, in)
}

// writeVerdict prints the verdict and its reasons.
func writeVerdict(w io.Writer, in ledger.Inspection) {
	if in.Usable {
		fmt.Fprintf(w, "\nVerdict: usable")
		if n := len(in.Warnings); n > 0 {
			fmt.Fprintf(w, ", with %d %s", n, map[bool]string{true: "warning", false: "warnings"}[n == 1])
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "\nVerdict: refused\n")
		for _, r := range in.Refusals {
			fmt.Fprintf(w, "  - %s\n", r)
		}
	}
	for _, warn := range in.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}

func quoteAll(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(out, ", ")
}
