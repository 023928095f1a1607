package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/notify/silence"
)

func newSilencesCmd(e *env) *cobra.Command {
	return group("silences", "hold back the notifications of some tickets for a while: add, list, expire",
		newSilencesAddCmd(e), newSilencesListCmd(e), newSilencesExpireCmd(e))
}

func newSilencesAddCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add MATCHER... --end D|T --by USER --comment TEXT [--start D|T] [--force]",
		Short: "hold back the notifications of the tickets the matchers match, until --end",
		Long: "Add a silence: until it ends, the notifications of the tickets (and provider incidents) its\n" +
			"matchers all match are recorded silenced instead of sent; the tickets are still opened,\n" +
			"escalated and counted. When it ends, each of its tickets still open gets one alert with its\n" +
			"current state.\n\n" +
			"A matcher is NAME=VALUE (equal) or NAME=~PATTERN (a PostgreSQL regular expression matching\n" +
			"the whole value), NAME one of provider, workflow, reason, owner, escalation_level.\n" +
			"A silence that matches no open ticket and names no configured provider or known workflow is\n" +
			"refused without --force (a typo would silence nothing), and so is one that would hold every\n" +
			"ticket (provider=~.+, or matchers that together match every open ticket and every value known).\n" +
			"A pattern may not use back-references, and must be cheap to match.",
	}
	start := cmd.Flags().String("start", "", "when it starts: a time (2026-12-01T10:00:00Z) or a duration from now (30m); default now")
	end := cmd.Flags().String("end", "", "when it ends (required): a time or a duration from now (2h, 1d); at most 14 days after its start")
	by := cmd.Flags().String("by", "", "who adds it, a Slack user id (required)")
	comment := cmd.Flags().String("comment", "", "why (required)")
	force := cmd.Flags().Bool("force", false, "add it even when it matches no open ticket and names no known provider or workflow, or would hold every ticket")
	asJSON := jsonFlag(cmd, "print the silence as JSON")
	textFlags(cmd, "start", "end", "by", "comment")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		// The rules are the review page's too: package silence reads and
		// checks what was typed.
		req := silence.Request{Matchers: args, Start: *start, End: *end, By: *by, Comment: *comment, Force: *force}
		now := time.Now()
		if _, err := silence.ParseRequest(req, now); err != nil {
			return silenceError(err)
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		added, plan, err := s.Silences().Request(cmd.Context(), req, s.KnownToSilences(), now)
		if err != nil {
			return silenceError(err)
		}
		for _, w := range plan.Warnings {
			fmt.Fprintf(e.stderr, "warning: %s\n", inert(w))
		}
		if *asJSON {
			return printJSON(e, added)
		}
		fmt.Fprintf(e.stdout, "silence %d (%s) added: %s, %s to %s; it matches %d open ticket(s) now\n", added.ID, added.State,
			inert(silence.MatchersText(added.Matchers)), added.StartsAt.UTC().Format(time.RFC3339), added.EndsAt.UTC().Format(time.RFC3339), plan.OpenTickets)
		return nil
	})
	return cmd
}

// silenceError is a silence refused for what was asked (exit 2, without
// the usage: the flags were well formed), saying how to force it when
// force would add it; or a failure.
func silenceError(err error) error {
	refused, ok := errors.AsType[*silence.RefusedError](err)
	switch {
	case !ok:
		return err
	case errors.Is(err, silence.ErrMatchesNothing):
		return &exitError{exitUsage, fmt.Errorf("refused: %s; add --force to add it anyway", strings.Join(refused.Problems, "\n"))}
	case errors.Is(err, silence.ErrHoldsEverything):
		return &exitError{exitUsage, fmt.Errorf("refused: %s; add --force if you mean it", strings.Join(refused.Problems, "\n"))}
	}
	return &exitError{exitUsage, err}
}

func newSilencesListCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--state active,pending|expired|all] [--limit N]",
		Short: "print the silences, newest first: state, time, author, matchers, what each held, comment",
		Args:  noArgs,
	}
	state := cmd.Flags().String("state", "active,pending", "active, pending, expired, several joined by commas, or all")
	limit := cmd.Flags().Int("limit", defaultListLimit, fmt.Sprintf("print at most this many silences, newest first (1 to %d)", maxListLimit))
	asJSON := jsonFlag(cmd, "print JSON")
	enumFlag(cmd, "state", append(slices.Clone(silence.States), "all")...)
	textFlags(cmd, "limit")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if *limit < 1 || *limit > maxListLimit {
			return usagef("--limit must be between 1 and %d, not %d", maxListLimit, *limit)
		}
		states, ok := silence.ParseStates(*state)
		if !ok {
			return usagef("--state must be active, pending, expired or all (or states joined by commas), not %q", *state)
		}
		filter := silence.Filter{States: states, Limit: *limit + 1}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		list, err := s.Silences().List(cmd.Context(), filter)
		if err != nil {
			return err
		}
		more := len(list) > *limit
		if more {
			list = list[:*limit]
		}
		trailer := fmt.Sprintf("%d silence(s)", len(list))
		if more {
			trailer = fmt.Sprintf("%d silence(s) shown, the newest; more exist: raise --limit (%d)", len(list), *limit)
		}
		if *asJSON {
			if list == nil {
				list = []silence.Silence{}
			}
			if err := printJSON(e, list); err != nil || !more {
				return err
			}
			fmt.Fprintln(e.stderr, trailer)
			return nil
		}
		silence.WriteTable(e.stdout, list)
		fmt.Fprintln(e.stderr, trailer)
		return nil
	})
	return cmd
}

func newSilencesExpireCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "expire ID... --by USER",
		Short: "end silences now; their tickets still open get their current alert at the next dispatch",
	}
	by := cmd.Flags().String("by", "", "who ends them, a Slack user id (required)")
	textFlags(cmd, "by")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("need silence ids")
		}
		ids := make([]int64, 0, len(args))
		for _, a := range args {
			id, err := idArg("silence", a)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		if strings.TrimSpace(*by) == "" {
			return usagef("--by is required (a Slack user id)")
		}
		if !silence.SlackUserRE.MatchString(*by) {
			return usagef("--by must be a Slack user id (U… or W…), not %q", *by)
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		store := s.Silences()
		failed := false
		for _, id := range ids {
			si, err := store.Expire(cmd.Context(), id, *by)
			if err != nil {
				fmt.Fprintf(e.stderr, "sweeper silences expire: %s\n", inertLines(err.Error()))
				failed = true
				continue
			}
			fmt.Fprintf(e.stdout, "silence %d expired by %s at %s; it held %d rows of %d tickets, whose tickets still open get their current alert\n",
				si.ID, inert(si.ExpiredBy), si.EndsAt.UTC().Format(time.RFC3339), si.HeldRows, si.HeldTickets)
		}
		if failed {
			return exited(exitFailure)
		}
		return nil
	})
	return cmd
}
