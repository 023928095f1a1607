package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/notify/outbox"
)

func newOutboxDismissCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dismiss ID... --by NAME --note TEXT",
		Short: "close parked rows that can never succeed; who and why go into the row's history",
	}
	by := cmd.Flags().String("by", "", "who dismisses the rows (required)")
	note := cmd.Flags().String("note", "", "why their messages will never be posted (required)")
	textFlags(cmd, "by", "note")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("need row ids")
		}
		ids, err := rowIDs(args)
		switch {
		case err != nil:
			return err
		case *by == "":
			return usagef("--by NAME is required")
		case strings.TrimSpace(*note) == "":
			return usagef("--note TEXT is required: why the message will never be posted")
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		store := outbox.NewStore(s.Pool)
		return eachRow(e, "dismiss", ids, func(id int64) (string, error) {
			n, err := store.Dismiss(cmd.Context(), id, *by, *note)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("row %d (%s) is dismissed; it will not be posted", n.ID, n.DedupeKey), nil
		})
	})
	return cmd
}
