package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/internal/app"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

func newSilencesCmd(e *env) *cobra.Command {
	return group("silences", "hold back the notifications of some tickets for a while: add, list, expire",
		newSilencesAddCmd(e), newSilencesListCmd(e), newSilencesExpireCmd(e))
}

// longSilence is past how long `silences add` warns: a silence that long
// is easy to forget.
const longSilence = 24 * time.Hour

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
			"refused without --force (a typo would silence nothing).",
	}
	start := cmd.Flags().String("start", "", "when it starts: a time (2026-12-01T10:00:00Z) or a duration from now (30m); default now")
	end := cmd.Flags().String("end", "", "when it ends (required): a time or a duration from now (2h, 1d); at most 14 days after its start")
	by := cmd.Flags().String("by", "", "who adds it, a Slack user id (required)")
	comment := cmd.Flags().String("comment", "", "why (required)")
	force := cmd.Flags().Bool("force", false, "add it even when it matches no open ticket and names no known provider or workflow")
	asJSON := jsonFlag(cmd, "print the silence as JSON")
	textFlags(cmd, "start", "end", "by", "comment")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("need at least one matcher (provider=NAME, workflow=~PATTERN, …): a silence never holds everything")
		}
		now := time.Now()
		ns := outbox.NewSilence{CreatedBy: strings.TrimSpace(*by), Comment: *comment}
		for _, a := range args {
			m, err := outbox.ParseMatcher(a)
			if err != nil {
				return usageError{err.Error()}
			}
			ns.Matchers = append(ns.Matchers, m)
		}
		var err error
		if strings.TrimSpace(*end) == "" {
			return usagef("--end is required: a silence always expires (a time, or a duration from now such as 2h)")
		}
		if ns.EndsAt, err = parseAhead(*end, now); err != nil {
			return usagef("--end %v", err)
		}
		if strings.TrimSpace(*start) != "" {
			if ns.StartsAt, err = parseAhead(*start, now); err != nil {
				return usagef("--start %v", err)
			}
		}
		switch {
		case ns.CreatedBy == "":
			return usagef("--by is required (a Slack user id)")
		case strings.TrimSpace(ns.Comment) == "":
			return usagef("--comment is required (why the notifications are held)")
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		store := outbox.NewStore(s.Pool)
		if err := store.CheckSilence(cmd.Context(), ns); err != nil {
			return silenceError(err)
		}
		matched, known, err := silenceTargets(cmd, s, store, ns.Matchers)
		if err != nil {
			return err
		}
		if matched == 0 && !known {
			why := "it matches no open ticket, and names no configured provider or known workflow (a typo?)"
			if !*force {
				return &exitError{exitUsage, fmt.Errorf("refused: %s; add --force to add it anyway", why)}
			}
			fmt.Fprintf(e.stderr, "warning: %s\n", why)
		}
		from := orNow(ns.StartsAt, now)
		if d := ns.EndsAt.Sub(from); d > longSilence {
			fmt.Fprintf(e.stderr, "warning: the silence lasts %s: remember to expire it if it is done sooner (sweeper silences expire)\n", d.Round(time.Minute))
		}
		added, err := store.AddSilence(cmd.Context(), ns)
		if err != nil {
			return silenceError(err)
		}
		if *asJSON {
			return printJSON(e, added)
		}
		fmt.Fprintf(e.stdout, "silence %d (%s) added: %s, %s to %s; it matches %d open ticket(s) now\n", added.ID, added.State,
			inert(matchersText(added.Matchers)), added.StartsAt.UTC().Format(time.RFC3339), added.EndsAt.UTC().Format(time.RFC3339), matched)
		return nil
	})
	return cmd
}

// orNow is t, or now when t is zero.
func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// silenceTargets counts the open tickets matchers match now, and says
// whether the matchers name something known: they have a provider or
// workflow matcher, and each matches a configured provider, or a workflow
// of the configuration (owners, channels) or of a ticket.
func silenceTargets(cmd *cobra.Command, s *app.App, store *outbox.Store, matchers []outbox.Matcher) (int64, bool, error) {
	labels, err := review.NewReader(s.Pool).OpenLabels(cmd.Context())
	if err != nil {
		return 0, false, err
	}
	open, err := store.MatchCount(cmd.Context(), matchers, labels)
	if err != nil {
		return 0, false, err
	}
	providers := slices.Collect(maps.Keys(s.Config.Providers))
	workflows := slices.Collect(maps.Keys(s.Config.Review.Owners.Workflows))
	workflows = slices.AppendSeq(workflows, maps.Keys(s.Config.Slack.Channels.Workflows))
	for _, l := range labels {
		providers, workflows = append(providers, l.Provider), append(workflows, l.Workflow)
	}
	named := slices.ContainsFunc(matchers, func(m outbox.Matcher) bool { return m.Name == "provider" || m.Name == "workflow" })
	if !named {
		return open, false, nil
	}
	knownProvider, err := store.Matches(cmd.Context(), matchers, "provider", providers)
	if err != nil {
		return 0, false, err
	}
	knownWorkflow, err := store.Matches(cmd.Context(), matchers, "workflow", workflows)
	if err != nil {
		return 0, false, err
	}
	return open, knownProvider && knownWorkflow, nil
}

// silenceError is a silence refused for what was asked (exit 2, without
// the usage: the flags were well formed), or a failure.
func silenceError(err error) error {
	if errors.Is(err, outbox.ErrInvalidSilence) {
		return &exitError{exitUsage, err}
	}
	return err
}

// parseAhead reads a time a person gives for something to come: a time
// (see [parseTime]) or a duration after now — Go's (90m, 2h) or whole days
// (1d).
func parseAhead(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, ok := parseTime(s); ok {
		return t, nil
	}
	d, err := parseDays(s)
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("%q is neither a duration from now (2h, 1d) nor a time (2026-11-29T10:00:00Z)", s)
	case d <= 0:
		return time.Time{}, fmt.Errorf("%q: a duration from now is positive", s)
	}
	return now.Add(d), nil
}

// matchersText shows a silence's matchers as they are typed.
func matchersText(ms []outbox.Matcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, " ")
}

var silenceStates = []string{outbox.SilenceActive, outbox.SilencePending, outbox.SilenceExpired}

func newSilencesListCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--state active,pending|expired|all] [--limit N]",
		Short: "print the silences, newest first: state, time, author, matchers, what each held, comment",
		Args:  noArgs,
	}
	state := cmd.Flags().String("state", "active,pending", "active, pending, expired, several joined by commas, or all")
	limit := cmd.Flags().Int("limit", defaultListLimit, fmt.Sprintf("print at most this many silences, newest first (1 to %d)", maxListLimit))
	asJSON := jsonFlag(cmd, "print JSON")
	enumFlag(cmd, "state", append(slices.Clone(silenceStates), "all")...)
	textFlags(cmd, "limit")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if *limit < 1 || *limit > maxListLimit {
			return usagef("--limit must be between 1 and %d, not %d", maxListLimit, *limit)
		}
		filter := outbox.SilenceFilter{Limit: *limit + 1}
		if *state != "all" {
			for _, st := range strings.Split(*state, ",") {
				if !slices.Contains(silenceStates, st) {
					return usagef("--state must be active, pending, expired or all (or states joined by commas), not %q", *state)
				}
				filter.States = append(filter.States, st)
			}
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		list, err := outbox.NewStore(s.Pool).Silences(cmd.Context(), filter)
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
				list = []outbox.Silence{}
			}
			if err := printJSON(e, list); err != nil || !more {
				return err
			}
			fmt.Fprintln(e.stderr, trailer)
			return nil
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tSTARTS\tENDS\tBY\tMATCHERS\tHELD\tCOMMENT")
		for _, si := range list {
			ends := si.EndsAt.UTC().Format(time.RFC3339)
			if si.ExpiredBy != "" {
				ends += " (expired by " + inert(si.ExpiredBy) + ")"
			}
			held := fmt.Sprintf("%d rows, %d tickets", si.HeldRows, si.HeldTickets)
			if si.HeldIncidents > 0 {
				held += fmt.Sprintf(", %d incidents", si.HeldIncidents)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", si.ID, si.State, si.StartsAt.UTC().Format(time.RFC3339), ends,
				inert(si.CreatedBy), inert(matchersText(si.Matchers)), held, inert(si.Comment))
		}
		tw.Flush()
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
		if !outbox.SlackUserRE.MatchString(*by) {
			return usagef("--by must be a Slack user id (U… or W…), not %q", *by)
		}
		s, closeDB, err := open(cmd.Context(), e, uses{})
		if err != nil {
			return err
		}
		defer closeDB()
		store := outbox.NewStore(s.Pool)
		failed := false
		for _, id := range ids {
			si, err := store.ExpireSilence(cmd.Context(), id, *by)
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
