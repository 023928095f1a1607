package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/review"
)

func runTickets(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || (args[0] != "list" && args[0] != "show" && args[0] != "-h" && args[0] != "--help") {
		fmt.Fprintln(e.stderr, "Usage: sweeper tickets list [--state open|resolved|all] [--json]\n       sweeper tickets show ID [--json]")
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(e.stdout, "Usage: sweeper tickets list [--state open|resolved|all] [--json]\n       sweeper tickets show ID [--json]")
		return exitOK
	}
	if args[0] == "list" {
		return runTicketsList(ctx, e, args[1:])
	}
	return runTicketsShow(ctx, e, args[1:])
}

func runTicketsList(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "tickets list", "tickets list [--config FILE] [--state open|resolved|all] [--json]")
	configPath := configFlag(fs)
	state := fs.String("state", "open", "open, resolved or all")
	asJSON := fs.Bool("json", false, "print JSON")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	filter := review.ListFilter{State: *state}
	switch *state {
	case review.StateOpen, review.StateResolved:
	case "all":
		filter.State = ""
	default:
		fmt.Fprintf(e.stderr, "sweeper tickets list: --state must be open, resolved or all, not %q\n", *state)
		return exitUsage
	}
	s, closeDB, code := open(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	tickets, err := reviews(s).List(ctx, filter)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper tickets list: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		if tickets == nil {
			tickets = []review.Ticket{}
		}
		return printJSON(e, tickets)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOP_KEY\tREASON\tOWNER\tPRIORITY\tLEVEL\tSTATE\tDEADLINE")
	for _, t := range tickets {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, t.OpKey, t.Reason, t.Owner, t.Priority,
			t.EscalationLevel, t.State, t.Deadline.UTC().Format(time.RFC3339))
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "%d ticket(s)\n", len(tickets))
	return exitOK
}

func runTicketsShow(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "tickets show", "tickets show [--config FILE] [--json] ID")
	configPath := configFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	// The id may come before or after the flags.
	var idArg string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		idArg, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(e.stdout)
			fs.Usage()
			return exitOK
		}
		return exitUsage
	}
	if idArg == "" && fs.NArg() == 1 {
		idArg = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "sweeper tickets show: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	id, err := strconv.ParseInt(idArg, 10, 64)
	if err != nil || id <= 0 {
		fmt.Fprintf(e.stderr, "sweeper tickets show: need a ticket id (a positive number), got %q\n", idArg)
		return exitUsage
	}
	s, closeDB, code := open(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	store := reviews(s)
	t, err := store.Get(ctx, id)
	if errors.Is(err, review.ErrTicketNotFound) {
		fmt.Fprintf(e.stderr, "sweeper tickets show: no ticket %d\n", id)
		return exitFailure
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper tickets show: %v\n", err)
		return exitFailure
	}
	events, err := store.Events(ctx, id)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper tickets show: %v\n", err)
		return exitFailure
	}
	if *asJSON {
		return printJSON(e, struct {
			review.Ticket
			Events []review.Event `json:"events"`
		}{t, events})
	}
	fmt.Fprintf(e.stdout, "ticket %d  %s  %s\n", t.ID, t.State, t.OpKey)
	fmt.Fprintf(e.stdout, "reason:    %s — %s\n", t.Reason, t.Reason.Describe())
	fmt.Fprintf(e.stdout, "owner:     %s\npriority:  %s (escalation level %d)\ndeadline:  %s\n",
		t.Owner, t.Priority, t.EscalationLevel, t.Deadline.UTC().Format(time.RFC3339))
	if t.State == review.StateResolved {
		fmt.Fprintf(e.stdout, "resolved:  %s by %s\n", t.Resolution, t.ResolvedBy)
	}
	var evidence any
	_ = json.Unmarshal(t.Evidence, &evidence)
	pretty, _ := json.MarshalIndent(evidence, "  ", "  ")
	fmt.Fprintf(e.stdout, "evidence:\n  %s\nevents:\n", pretty)
	for _, ev := range events {
		fmt.Fprintf(e.stdout, "  %s  %-10s by %s  %s\n", ev.At.UTC().Format(time.RFC3339), ev.Kind, ev.Actor, ev.Details)
	}
	return exitOK
}

func reviews(s *jobs.Sweeper) *review.Store { return review.NewStore(s.Pool, jobs.Policy(s.Config)) }

func printJSON(e *env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(e.stderr, "sweeper: %v\n", err)
		return exitFailure
	}
	return exitOK
}
