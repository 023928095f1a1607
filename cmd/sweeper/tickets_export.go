package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/review"
)

func newTicketsExportCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export --since WHEN [--until WHEN] [--format jsonl|csv] [--output FILE [--force]]",
		Short: "write every ticket opened in [since, until) with its events and resolution, for an audit",
		Long: `Write every ticket opened at or after --since and before --until, with its
audit events and its resolution, as JSON lines (one ticket a line, its events
nested) or CSV (a header line, then one row per event with the ticket's
columns repeated). Recipients are masked as in the evidence; control
characters are escaped. WHEN is an RFC 3339 time (2026-11-01T00:00:00Z), a
date (2026-11-01, midnight UTC) or a duration before now (720h, 90m, 30d).
The export reads one snapshot of the database, a page of tickets at a time.
With --output the file appears only once the export is complete, and a file
that exists is refused unless --force.`,
		Args: noArgs,
	}
	since := cmd.Flags().String("since", "", "first time of the window (required)")
	until := cmd.Flags().String("until", "", "end of the window, excluded (default now)")
	format := cmd.Flags().String("format", "jsonl", "jsonl or csv")
	output := cmd.Flags().String("output", "", "write to this file instead of stdout; a file that exists is refused")
	force := cmd.Flags().Bool("force", false, "with --output: replace the file if it exists")
	enumFlag(cmd, "format", "jsonl", "csv")
	textFlags(cmd, "since", "until")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		now := time.Now()
		if *since == "" {
			return usagef("--since is required: an RFC 3339 time, a date or a duration before now (720h, 30d)")
		}
		from, err := parseWhen(*since, now)
		if err != nil {
			return usagef("--since: %v", err)
		}
		to := now
		if *until != "" {
			if to, err = parseWhen(*until, now); err != nil {
				return usagef("--until: %v", err)
			}
		}
		if !from.Before(to) {
			return usagef("--since %s is not before --until %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
		}
		switch *format {
		case "jsonl":
		case "csv":
		default:
			return usagef("--format must be jsonl or csv, not %q", *format)
		}
		if *force && *output == "" {
			return usagef("--force replaces the --output file: give --output FILE")
		}
		if _, err := os.Lstat(*output); *output != "" && !*force && err == nil {
			return usagef("--output %s exists; export never overwrites a file: pass --force to replace it, or another --output", *output)
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()

		out, commit, abort, err := exportOutput(e, *output, *force)
		if err != nil {
			return err
		}
		defer abort()
		w := review.NewExportWriter(out, *format)
		tickets, events := 0, 0
		err = pgx.BeginTxFunc(cmd.Context(), s.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error {
				return review.NewExporter(tx).Export(cmd.Context(), from, to, func(t review.Exported) error {
					tickets++
					events += len(t.Events)
					return w.Write(t)
				})
			})
		if err == nil {
			err = w.Flush()
		}
		if err == nil {
			err = commit()
		}
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(e.stderr, "%d ticket(s), %d event(s) opened in [%s, %s)\n", tickets, events,
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
		return nil
	})
	return cmd
}

// exportOutput returns where the export goes: stdout, or a temporary file
// beside path that commit renames to path, so that a failed export never
// leaves a file that looks complete. Without replace, commit links it
// instead, which fails if path has appeared meanwhile: a file is never
// overwritten unasked. abort removes the temporary file unless commit
// ran.
func exportOutput(e *env, path string, replace bool) (out io.Writer, commit func() error, abort func(), err error) {
	if path == "" {
		return e.stdout, func() error { return nil }, func() {}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--output: %w", err)
	}
	done := false
	commit = func() error {
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if replace {
			if err := os.Rename(f.Name(), path); err != nil {
				return err
			}
			done = true
			return nil
		}
		if err := os.Link(f.Name(), path); err != nil {
			return fmt.Errorf("--output: %w (pass --force to replace it)", err)
		}
		done = true
		return os.Remove(f.Name())
	}
	abort = func() {
		if !done {
			f.Close()
			os.Remove(f.Name())
		}
	}
	return f, commit, abort, nil
}
