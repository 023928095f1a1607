package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/notify/outbox"
)

func newOutboxReplayCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use: "replay (ID... [--not-posted] | --all-parked [--error CODE]) --by NAME",
		Example: "  sweeper outbox replay 36 37 --by alice\n" +
			"  sweeper outbox replay --all-parked --error token_revoked --by alice",
		Short: "make parked rows pending again after the fix: the ids given, or --all-parked",
	}
	by := cmd.Flags().String("by", "", "who replays the rows (required)")
	all := cmd.Flags().Bool("all-parked", false, "replay every parked row (but those parked for their age, unless --error expired)")
	code := cmd.Flags().String("error", "", "with --all-parked: only the rows parked with this error code (token_revoked, channel_not_found, expired, …)")
	notPosted := cmd.Flags().Bool("not-posted", false, "you checked that the message is not in Slack: post it without searching (after search_inconclusive)")
	textFlags(cmd, "by", "error")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) > 0 && *all:
			return usagef("either row ids or --all-parked, not both")
		case len(args) == 0 && !*all:
			return usagef("need row ids or --all-parked")
		case *code != "" && !*all:
			return usagef("--error goes with --all-parked")
		case *notPosted && *all:
			return usagef("--not-posted is for rows a person checked, one by one: name their ids")
		}
		ids, err := rowIDs(args)
		if err != nil {
			return err
		}
		if *by == "" {
			return usagef("--by NAME is required")
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		store := outbox.NewStore(s.Pool)
		if *all {
			rows, err := store.ReplayParked(cmd.Context(), *code, *by)
			if err != nil {
				return err
			}
			for _, n := range rows {
				fmt.Fprintf(e.stdout, "row %d (%s) is pending again\n", n.ID, n.DedupeKey)
			}
			fmt.Fprintf(e.stderr, "%d row(s) replayed; the next notify pass delivers them\n", len(rows))
			return nil
		}
		replay := store.Replay
		if *notPosted {
			replay = store.ReplayNotPosted
		}
		return eachRow(e, "replay", ids, func(id int64) (string, error) {
			n, err := replay(cmd.Context(), id, *by)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("row %d (%s) is pending again; the next notify pass delivers it", n.ID, n.DedupeKey), nil
		})
	})
	return cmd
}
