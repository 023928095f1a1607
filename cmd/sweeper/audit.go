package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newAuditCmd(e *env) *cobra.Command {
	return group("audit", "what the audit of settled operations sees: report",
		newAuditReportCmd(e))
}

func newAuditReportCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report [--since 24h] [--provider NAME]... [--json]",
		Short: "records the providers hold under an op_key no ledger row has (orphans), listed over a window",
		Long: "Ask each provider whose adapter can list its records by op_key (docs/adapters.md, \"What the\n" +
			"audit can see\") for the records dated since --since, and print those whose op_key no row of the\n" +
			"ledger has: effects some workflow caused without writing its intent first. One request per\n" +
			"provider, which takes its turn in the provider's rate limit; nothing is written, no ticket opened.\n" +
			"A provider that cannot list is printed as such: that is not \"no orphan\".",
		Args: noArgs,
	}
	since := cmd.Flags().Duration("since", 24*time.Hour, "how far back to list, from now")
	names := cmd.Flags().StringArray("provider", nil, "only this provider (repeatable); default every one")
	asJSON := jsonFlag(cmd, "print the report as JSON")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if *since <= 0 || *since > 2160*time.Hour {
			return usagef("--since must be between 1s and 2160h, not %s", *since)
		}
		s, closeDB, err := open(cmd.Context(), e, uses{lookups: true})
		if err != nil {
			return err
		}
		defer closeDB()
		for _, n := range *names {
			if s.Providers[n] == nil {
				return usagef("--provider %q: no [providers.%s] block", n, n)
			}
		}
		reports, err := s.Auditor().Orphans(cmd.Context(), time.Now().Add(-*since), *names...)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e, reports)
		}
		fmt.Fprintf(e.stdout, "%-16s %-32s %-32s %s\n", "PROVIDER", "OP_KEY", "RECORD", "CREATED")
		for _, r := range reports {
			switch {
			case r.Unsupported:
				fmt.Fprintf(e.stdout, "%-16s (its adapter cannot list records by op_key)\n", r.Provider)
			case r.Error != "":
				fmt.Fprintf(e.stdout, "%-16s (could not be asked: %s)\n", r.Provider, inert(r.Error))
			case len(r.Orphans) == 0:
				fmt.Fprintf(e.stdout, "%-16s (none of its %d records)\n", r.Provider, r.Listed)
			}
			for _, o := range r.Orphans {
				fmt.Fprintf(e.stdout, "%-16s %-32s %-32s %s\n", o.Provider, inert(o.OpKey), inert(o.RecordID),
					o.CreatedAt.UTC().Format(time.RFC3339))
			}
		}
		return nil
	})
	return cmd
}
