package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sweeper/sweeper/internal/app"
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
	// By hand: what is owed goes now, without slack.group_wait.
	d, err := s.DispatcherNow()
	if errors.Is(err, app.ErrSlackOff) {
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
	if s.Skipped > 0 {
		fmt.Fprintf(w, ", %d not posted: their ticket settled before its first alert was due", s.Skipped)
	}
	fmt.Fprintln(w)
}

const outboxUsage = `Usage: sweeper outbox list [--state pending|sent|parked|dismissed|skipped|all] [--json]
       sweeper outbox replay ID... --by NAME [--not-posted]
       sweeper outbox replay --all-parked [--error CODE] --by NAME
       sweeper outbox dismiss ID... --by NAME --note TEXT`

func runOutbox(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || (args[0] != "list" && args[0] != "replay" && args[0] != "dismiss") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(e.stdout, outboxUsage)
			return exitOK
		}
		fmt.Fprintln(e.stderr, outboxUsage)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "replay":
		return runOutboxReplay(ctx, e, args)
	case "dismiss":
		return runOutboxDismiss(ctx, e, args)
	}
	fs := newFlagSet(e, "outbox list", "outbox list [--config FILE] [--state pending|sent|parked|dismissed|all] [--json]")
	configPath := configFlag(fs)
	state := fs.String("state", "all", "pending, sent, parked, dismissed, skipped or all")
	asJSON := fs.Bool("json", false, "print JSON")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	filter := notify.OutboxFilter{State: *state}
	switch *state {
	case "all":
		filter.State = ""
	case notify.OutboxPending, notify.OutboxSent, notify.OutboxParked, notify.OutboxDismissed, notify.OutboxSkipped:
	default:
		fmt.Fprintf(e.stderr, "sweeper outbox list: --state must be pending, sent, parked, dismissed, skipped or all, not %q\n", *state)
		return exitUsage
	}
	s, closeDB, code := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	rows, err := notify.NewOutbox(s.Pool).List(ctx, filter)
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
	fmt.Fprintln(tw, "ID\tTICKET\tKIND\tSTATE\tATTEMPTS\tTS\tCODE\tLAST ERROR")
	for _, n := range rows {
		ticket := strconv.FormatInt(n.TicketID, 10)
		switch {
		case n.IncidentID != 0:
			ticket = fmt.Sprintf("incident %d", n.IncidentID)
		case n.TicketID == 0 && n.GroupID != 0:
			ticket = fmt.Sprintf("group %d", n.GroupID)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.ID, ticket, n.Kind, n.State, n.Attempts, n.TS, n.ErrorCode, n.LastError)
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "%d row(s)\n", len(rows))
	return exitOK
}

func runOutboxReplay(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "outbox replay", "outbox replay ID... --by NAME [--not-posted] [--config FILE]\n       sweeper outbox replay --all-parked [--error CODE] --by NAME [--config FILE]")
	configPath := configFlag(fs)
	by := fs.String("by", "", "who replays the rows (required)")
	all := fs.Bool("all-parked", false, "replay every parked row (but those parked for their age, unless --error expired)")
	code := fs.String("error", "", "with --all-parked: only the rows parked with this error code (token_revoked, channel_not_found, expired, …)")
	notPosted := fs.Bool("not-posted", false, "you checked that the message is not in Slack: post it without searching (after search_inconclusive)")
	idArgs, exit := parseIDsAndFlags(e, fs, args)
	if exit >= 0 {
		return exit
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "sweeper outbox replay: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case len(idArgs) > 0 && *all:
		return usage("either row ids or --all-parked, not both")
	case len(idArgs) == 0 && !*all:
		return usage("need row ids or --all-parked")
	case *code != "" && !*all:
		return usage("--error goes with --all-parked")
	case *notPosted && *all:
		return usage("--not-posted is for rows a person checked, one by one: name their ids")
	}
	ids, err := rowIDs(idArgs)
	if err != nil {
		return usage("%v", err)
	}
	if *by == "" {
		return usage("--by NAME is required")
	}
	s, closeDB, exit := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return exit
	}
	defer closeDB()
	outbox := notify.NewOutbox(s.Pool)
	if *all {
		rows, err := outbox.ReplayParked(ctx, *code, *by)
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper outbox replay: %v\n", err)
			return exitFailure
		}
		for _, n := range rows {
			fmt.Fprintf(e.stdout, "row %d (%s) is pending again\n", n.ID, n.DedupeKey)
		}
		fmt.Fprintf(e.stdout, "%d row(s) replayed; the next notify pass delivers them\n", len(rows))
		return exitOK
	}
	replay := outbox.Replay
	if *notPosted {
		replay = outbox.ReplayNotPosted
	}
	return eachRow(e, "replay", ids, func(id int64) (string, error) {
		n, err := replay(ctx, id, *by)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("row %d (%s) is pending again; the next notify pass delivers it", n.ID, n.DedupeKey), nil
	})
}

func runOutboxDismiss(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "outbox dismiss", "outbox dismiss ID... --by NAME --note TEXT [--config FILE]")
	configPath := configFlag(fs)
	by := fs.String("by", "", "who dismisses the rows (required)")
	note := fs.String("note", "", "why their messages will never be posted (required)")
	idArgs, exit := parseIDsAndFlags(e, fs, args)
	if exit >= 0 {
		return exit
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "sweeper outbox dismiss: "+format+"\n", a...)
		return exitUsage
	}
	if len(idArgs) == 0 {
		return usage("need row ids")
	}
	ids, err := rowIDs(idArgs)
	switch {
	case err != nil:
		return usage("%v", err)
	case *by == "":
		return usage("--by NAME is required")
	case strings.TrimSpace(*note) == "":
		return usage("--note TEXT is required: why the message will never be posted")
	}
	s, closeDB, exit := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return exit
	}
	defer closeDB()
	outbox := notify.NewOutbox(s.Pool)
	return eachRow(e, "dismiss", ids, func(id int64) (string, error) {
		n, err := outbox.Dismiss(ctx, id, *by, *note)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("row %d (%s) is dismissed; it will not be posted", n.ID, n.DedupeKey), nil
	})
}

// eachRow does do for each id, printing what it did or why not, and
// returns exitFailure when any failed: every id is tried.
func eachRow(e *env, what string, ids []int64, do func(int64) (string, error)) int {
	code := exitOK
	for _, id := range ids {
		line, err := do(id)
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper outbox %s: %v\n", what, err)
			code = exitFailure
			continue
		}
		fmt.Fprintln(e.stdout, line)
	}
	return code
}

// rowIDs reads outbox row ids.
func rowIDs(args []string) ([]int64, error) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("need row ids (positive numbers), got %q", a)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// parseIDsAndFlags parses args, where row ids and flags may come in any
// order (`replay 36 37 --by alice`, `replay --by alice 36 37`), and returns
// the ids; the exit code is as [parseFlags]'s.
func parseIDsAndFlags(e *env, fs *flag.FlagSet, args []string) ([]string, int) {
	var ids []string
	for {
		for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			ids, args = append(ids, args[0]), args[1:]
		}
		if len(args) == 0 {
			return ids, -1
		}
		usage := fs.Usage
		fs.Usage = func() {}
		err := fs.Parse(args)
		fs.Usage = usage
		switch {
		case errors.Is(err, flag.ErrHelp):
			fs.SetOutput(e.stdout)
			fs.Usage()
			return nil, exitOK
		case err != nil:
			fs.Usage()
			return nil, exitUsage
		}
		args = fs.Args()
	}
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
