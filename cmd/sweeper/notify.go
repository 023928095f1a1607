package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/notify"
)

func newNotifyCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify --once",
		Short: "deliver the outbox (review alerts) to Slack, then exit",
		Long: "notify --once delivers what the outbox owes Slack (and PagerDuty and the webhook, when on) now, without slack.group_wait, and exits:\n" +
			"1 when a row failed, was parked or had an unknown result. With Slack off (slack.channel empty)\n" +
			"it records each row owed as skipped (no_receiver), as the daemon does.",
		Args: noArgs,
	}
	once := cmd.Flags().Bool("once", false, "deliver the outbox to Slack once, then exit (required)")
	asJSON := jsonFlag(cmd, "print the counts as JSON")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if !*once {
			return usagef("--once is required (the daemon, 'sweeper run', delivers on schedules.notify)")
		}
		s, closeDB, err := open(cmd.Context(), e, uses{slack: true})
		if err != nil {
			return err
		}
		defer closeDB()
		// By hand: what is owed goes now, without slack.group_wait. With
		// Slack off, what is owed is recorded skipped, as the daemon does.
		d, err := s.DispatcherNow()
		if errors.Is(err, app.ErrSlackOff) {
			d, err = s.SkippingDispatcher()
		}
		if err != nil {
			return configError(err)
		}
		// And the other receivers' rows (pagerduty, webhook), each by its
		// own dispatcher.
		others, err := s.OtherDispatchers()
		if err != nil {
			return configError(err)
		}
		var stats notify.Stats
		for _, o := range others {
			st, oerr := o.Drain(cmd.Context())
			stats.Add(st)
			err = errors.Join(err, oerr)
		}
		st, derr := d.Drain(cmd.Context())
		stats.Add(st)
		err = errors.Join(err, derr)
		if *asJSON {
			if jsonErr := printJSON(e, stats); jsonErr != nil {
				return jsonErr
			}
		} else {
			printStats(e.stdout, stats)
		}
		if problems := deliveryProblems(stats, err); len(problems) > 0 {
			return passFailed(problems)
		}
		return nil
	})
	return cmd
}

// deliveryProblems lists what went wrong in a delivery pass. A rate limit
// is not a problem: Slack said when to come back, and the row waits; nor is
// an alert parked for its age, which is what slack.max_alert_age asks.
func deliveryProblems(s notify.Stats, err error) []string {
	var problems []string
	for _, p := range []struct {
		n    int
		what string
	}{
		{s.Failed, "row(s) failed and wait for a retry"},
		{s.Uncertain, "attempt(s) with an unknown result; the row(s) are searched for in Slack before any new post"},
		{s.Parked, "row(s) parked on Slack's refusal or an inconclusive search (sweeper outbox list --state parked)"},
		{s.Lost, "outcome(s) not recorded; the next attempt searches Slack first"},
	} {
		if p.n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

func printStats(w io.Writer, s notify.Stats) {
	fmt.Fprintf(w, "slack: %d sent (%d found already posted), %d uncertain, %d rate-limited, %d failed, %d parked",
		s.Sent, s.Adopted, s.Uncertain, s.RateLimited, s.Failed, s.Parked)
	if s.Inconclusive > 0 {
		fmt.Fprintf(w, " (%d after an inconclusive search)", s.Inconclusive)
	}
	if s.Expired > 0 {
		fmt.Fprintf(w, ", %d not posted for their age (slack.max_alert_age)", s.Expired)
	}
	if settled := s.Skipped - s.Nowhere; settled > 0 {
		fmt.Fprintf(w, ", %d not posted: their ticket settled before its first alert was due", settled)
	}
	if s.Nowhere > 0 {
		fmt.Fprintf(w, ", %d recorded skipped: Slack is off (no_receiver)", s.Nowhere)
	}
	if s.Folded > 0 {
		fmt.Fprintf(w, ", %d folded into their alert group's counts (slack.group_detail_limit)", s.Folded)
	}
	if s.Silenced > 0 {
		fmt.Fprintf(w, ", %d held by a silence (sweeper silences list)", s.Silenced)
	}
	if s.SilenceAlerts > 0 {
		fmt.Fprintf(w, ", %d ticket(s) given their current alert as a silence ended", s.SilenceAlerts)
	}
	fmt.Fprintln(w)
}

// deliverAfterPass drains the outbox after a --once pass, so the
// notifications the pass caused go out before the command exits.
func deliverAfterPass(ctx context.Context, e *env, s *app.App) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stats, err := s.Deliver(ctx)
	if stats.Claimed > 0 {
		printStats(e.stderr, stats.Stats) // stderr: stdout may be the pass's JSON
	}
	if stats.Left > 0 {
		fmt.Fprintf(e.stderr, "slack: %d alert(s) left in the outbox for the daemon\n", stats.Left)
	}
	return err
}
