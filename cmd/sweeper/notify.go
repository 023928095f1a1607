package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/notify"
)

func runNotify(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "notify", "notify --once [--config FILE] [--json]")
	configPath := configFlag(fs)
	once := fs.Bool("once", false, "deliver the outbox to Slack once, then exit (required)")
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	if !*once {
		fmt.Fprintln(e.stderr, "sweeper notify: --once is required (the daemon, 'sweeper run', delivers on schedules.notify)")
		return exitUsage
	}
	s, closeDB, code := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	d, err := s.Dispatcher()
	if errors.Is(err, jobs.ErrSlackOff) {
		fmt.Fprintln(e.stderr, "sweeper notify: slack.channel is empty: nothing to deliver to")
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper notify: %v\n", err)
		return exitUsage
	}
	stats, err := d.Drain(ctx)
	if *asJSON {
		printJSON(e, stats)
	} else {
		printStats(e.stdout, stats)
	}
	if problems := deliveryProblems(stats, err); len(problems) > 0 {
		return passFailed(e, "notify", problems)
	}
	return exitOK
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
		{s.Parked, "row(s) parked on Slack's refusal (sweeper outbox list --state parked)"},
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
	if s.Expired > 0 {
		fmt.Fprintf(w, ", %d not posted for their age (slack.max_alert_age)", s.Expired)
	}
	fmt.Fprintln(w)
}

func runOutbox(ctx context.Context, e *env, args []string) int {
	const usage = "Usage: sweeper outbox list [--state pending|sent|parked|all] [--json]\n       sweeper outbox replay ID --by NAME"
	if len(args) == 0 || (args[0] != "list" && args[0] != "replay") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(e.stdout, usage)
			return exitOK
		}
		fmt.Fprintln(e.stderr, usage)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlagSet(e, "outbox "+sub, "outbox "+sub+" [--config FILE] …")
	configPath := configFlag(fs)
	state := fs.String("state", "all", "list: pending, sent, parked or all")
	asJSON := fs.Bool("json", false, "list: print JSON")
	by := fs.String("by", "", "replay: who replays the row (required)")
	var idArg string
	if sub == "replay" && len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		idArg, args = args[0], args[1:]
	}
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	filter := notify.OutboxFilter{State: *state}
	if *state == "all" {
		filter.State = ""
	} else if *state != "pending" && *state != "sent" && *state != "parked" {
		fmt.Fprintf(e.stderr, "sweeper outbox list: --state must be pending, sent, parked or all, not %q\n", *state)
		return exitUsage
	}
	var id int64
	if sub == "replay" {
		var err error
		if id, err = strconv.ParseInt(idArg, 10, 64); err != nil || id <= 0 {
			fmt.Fprintf(e.stderr, "sweeper outbox replay: need a row id (a positive number), got %q\n", idArg)
			return exitUsage
		}
		if *by == "" {
			fmt.Fprintln(e.stderr, "sweeper outbox replay: --by NAME is required")
			return exitUsage
		}
	}
	s, closeDB, code := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	outbox := notify.NewOutbox(s.Pool)
	if sub == "replay" {
		n, err := outbox.Replay(ctx, id, *by)
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper outbox replay: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(e.stdout, "row %d (%s) is pending again; the next notify pass delivers it\n", n.ID, n.DedupeKey)
		return exitOK
	}
	rows, err := outbox.List(ctx, filter)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper outbox list: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		if rows == nil {
			rows = []notify.Notification{}
		}
		return printJSON(e, rows)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTICKET\tKIND\tSTATE\tATTEMPTS\tTS\tLAST ERROR")
	for _, n := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%s\n", n.ID, n.TicketID, n.Kind, n.State, n.Attempts, n.TS, n.LastError)
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "%d row(s)\n", len(rows))
	return exitOK
}

// deliverAfterPass drains the outbox after a --once pass, so the
// notifications the pass caused go out before the command exits.
func deliverAfterPass(ctx context.Context, e *env, s *jobs.Sweeper) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stats, err := s.Deliver(ctx)
	if stats.Claimed > 0 {
		printStats(e.stderr, stats) // stderr: stdout may be the pass's JSON
	}
	return err
}
