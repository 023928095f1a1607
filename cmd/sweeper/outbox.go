package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func newOutboxCmd(e *env) *cobra.Command {
	return group("outbox", "the Slack outbox, parked rows included: list, replay, dismiss",
		newOutboxListCmd(e), newOutboxReplayCmd(e), newOutboxDismissCmd(e))
}

// eachRow does do for each id, printing what it did or why not, and
// fails when any failed: every id is tried.
func eachRow(e *env, what string, ids []int64, do func(int64) (string, error)) error {
	failed := false
	for _, id := range ids {
		line, err := do(id)
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper outbox %s: %s\n", what, inertLines(err.Error()))
			failed = true
			continue
		}
		fmt.Fprintln(e.stdout, line)
	}
	if failed {
		return exited(exitFailure)
	}
	return nil
}

// rowIDs reads outbox row ids.
func rowIDs(args []string) ([]int64, error) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return nil, usagef("need row ids (positive numbers), got %q", a)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
