package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sweeper/sweeper/internal/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

const ticketsUsage = `Usage: sweeper tickets list [--state open|resolved|all] [--provider P] [--reason R] [--json]
       sweeper tickets show ID [--json]
       sweeper tickets resolve ID --outcome done|not_sent|duplicate [--provider-record-id X] --by NAME [--note TEXT] [--json]
       sweeper tickets ack ID --by NAME [--json]
Each takes --config FILE.`

func runTickets(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, ticketsUsage)
		return exitUsage
	}
	switch args[0] {
	case "list":
		return runTicketsList(ctx, e, args[1:])
	case "show":
		return runTicketsShow(ctx, e, args[1:])
	case "resolve":
		return runTicketsResolve(ctx, e, args[1:])
	case "ack":
		return runTicketsAck(ctx, e, args[1:])
	case "-h", "--help":
		fmt.Fprintln(e.stdout, ticketsUsage)
		return exitOK
	}
	fmt.Fprintln(e.stderr, ticketsUsage)
	return exitUsage
}

func runTicketsList(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "tickets list", "tickets list [--config FILE] [--state open|resolved|all] [--provider P] [--reason R] [--json]")
	configPath := configFlag(fs)
	state := fs.String("state", "open", "open, resolved or all")
	provider := fs.String("provider", "", "only the tickets of this provider")
	reason := fs.String("reason", "", "only the tickets of this reason (not_found, lookup_failed, …)")
	asJSON := fs.Bool("json", false, "print JSON")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	if *reason != "" && !slices.Contains(review.Reasons, review.Reason(*reason)) {
		fmt.Fprintf(e.stderr, "sweeper tickets list: --reason %q is not a reason: %v\n", *reason, review.Reasons)
		return exitUsage
	}
	filter := review.ListFilter{State: *state, Provider: *provider, Reason: *reason}
	switch *state {
	case review.StateOpen, review.StateResolved:
	case "all":
		filter.State = ""
	default:
		fmt.Fprintf(e.stderr, "sweeper tickets list: --state must be open, resolved or all, not %q\n", *state)
		return exitUsage
	}
	s, closeDB, code := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
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
	id, code := parseWithID(e, fs, args)
	if code >= 0 {
		return code
	}
	s, closeDB, code := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
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
	printTicket(e, t)
	var evidence any
	_ = json.Unmarshal(t.Evidence, &evidence)
	fmt.Fprint(e.stdout, "evidence:\n  ")
	_ = writeJSON(e.stdout, "  ", evidence)
	fmt.Fprint(e.stdout, "events:\n")
	for _, ev := range events {
		fmt.Fprintf(e.stdout, "  %s  %-10s by %s  %s\n", ev.At.UTC().Format(time.RFC3339), ev.Kind, ev.Actor, ev.Details)
	}
	return exitOK
}

func reviews(s *app.App) *review.Store { return review.NewStore(s.Pool, app.Policy(s.Config)) }

func runTicketsResolve(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "tickets resolve", "tickets resolve ID --outcome done|not_sent|duplicate "+
		"[--provider-record-id X] --by NAME [--note TEXT] [--config FILE] [--json]")
	configPath := configFlag(fs)
	outcome := fs.String("outcome", "", "done (the effect happened), not_sent (it did not: the ledger row fails), "+
		"or duplicate (several records exist: name the one that stands)")
	recordID := fs.String("provider-record-id", "", "the provider's record: required for done and duplicate")
	by := fs.String("by", "", "who decides (required)")
	note := fs.String("note", "", "why, for the audit trail")
	asJSON := fs.Bool("json", false, "print the resolved ticket as JSON")
	id, code := parseWithID(e, fs, args)
	if code >= 0 {
		return code
	}
	r := review.Resolution{TicketID: id, Outcome: *outcome, ProviderRecordID: *recordID, By: *by, Note: *note}
	if err := r.Validate(); err != nil {
		fmt.Fprintf(e.stderr, "sweeper tickets resolve: %v\n", err)
		fs.Usage()
		return exitUsage
	}
	s, closeDB, code := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	t, err := reviews(s).Resolve(ctx, r)
	if code := decisionError(e, "tickets resolve", id, err); code >= 0 {
		return code
	}
	if *asJSON {
		return printJSON(e, t)
	}
	status := ledger.StatusDone
	if t.Resolution == review.ResolutionNotSent {
		status = ledger.StatusFailed
	}
	fmt.Fprintf(e.stdout, "resolved ticket %d as %s; operation %s is now %s\n\n", t.ID, t.Resolution, t.OpKey, status)
	printTicket(e, t)
	return exitOK
}

func runTicketsAck(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "tickets ack", "tickets ack ID --by NAME [--config FILE] [--json]")
	configPath := configFlag(fs)
	by := fs.String("by", "", "who takes the ticket (required)")
	asJSON := fs.Bool("json", false, "print the acknowledged ticket as JSON")
	id, code := parseWithID(e, fs, args)
	if code >= 0 {
		return code
	}
	if strings.TrimSpace(*by) == "" {
		fmt.Fprintln(e.stderr, "sweeper tickets ack: --by is required (who takes the ticket)")
		fs.Usage()
		return exitUsage
	}
	s, closeDB, code := openNoLookups(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	t, err := reviews(s).Acknowledge(ctx, id, *by, 0)
	if code := decisionError(e, "tickets ack", id, err); code >= 0 {
		return code
	}
	if *asJSON {
		return printJSON(e, t)
	}
	fmt.Fprintf(e.stdout, "acknowledged ticket %d at escalation level %d; the deadline stays %s\n\n",
		t.ID, t.EscalationLevel, t.Deadline.UTC().Format(time.RFC3339))
	printTicket(e, t)
	return exitOK
}

// decisionError prints why a resolution or acknowledgement was refused and
// returns its exit code, or -1 when err is nil.
func decisionError(e *env, name string, id int64, err error) int {
	var handled *review.HandledError
	switch {
	case err == nil:
		return -1
	case errors.Is(err, review.ErrInvalidRequest):
		fmt.Fprintf(e.stderr, "sweeper %s: %v\n", name, err)
		return exitUsage
	case errors.Is(err, review.ErrTicketNotFound):
		fmt.Fprintf(e.stderr, "sweeper %s: no ticket %d\n", name, id)
	case errors.As(err, &handled):
		fmt.Fprintf(e.stderr, "sweeper %s: ticket %d was already handled (%s); nothing changed\n", name, id, handled.Why)
	case errors.Is(err, review.ErrNotInReview):
		fmt.Fprintf(e.stderr, "sweeper %s: ticket %d stays open: %v; nothing changed\n", name, id, err)
	default:
		fmt.Fprintf(e.stderr, "sweeper %s: %v\n", name, err)
	}
	return exitFailure
}

// parseWithID parses a command's flags and its one ticket id, which may
// come before, between or after the flags. It returns the id, or an exit
// code (exitOK after --help, exitUsage after a mistake) with -1 to go on.
func parseWithID(e *env, fs *flag.FlagSet, args []string) (int64, int) {
	var idArg string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(e.stdout)
				fs.Usage()
				return 0, exitOK
			}
			return 0, exitUsage // flag has printed the error and the usage
		}
		if fs.NArg() == 0 {
			break
		}
		if idArg != "" {
			fmt.Fprintf(e.stderr, "sweeper %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
			return 0, exitUsage
		}
		idArg, args = fs.Arg(0), fs.Args()[1:]
	}
	id, err := strconv.ParseInt(idArg, 10, 64)
	if err != nil || id <= 0 {
		fmt.Fprintf(e.stderr, "sweeper %s: need a ticket id (a positive number), got %q\n", fs.Name(), idArg)
		return 0, exitUsage
	}
	return id, -1
}

// printTicket prints a ticket's state, without its evidence and events.
func printTicket(e *env, t review.Ticket) {
	fmt.Fprintf(e.stdout, "ticket %d  %s  %s\n", t.ID, t.State, t.OpKey)
	fmt.Fprintf(e.stdout, "reason:    %s — %s\n", t.Reason, t.Reason.Describe())
	fmt.Fprintf(e.stdout, "owner:     %s\npriority:  %s (escalation level %d)\ndeadline:  %s\nversion:   %d\n",
		t.Owner, t.Priority, t.EscalationLevel, t.Deadline.UTC().Format(time.RFC3339), t.Version)
	if t.AcknowledgedLevel != nil && t.AcknowledgedAt != nil {
		fmt.Fprintf(e.stdout, "acked:     by %s at level %d, %s\n",
			t.AcknowledgedBy, *t.AcknowledgedLevel, t.AcknowledgedAt.UTC().Format(time.RFC3339))
	}
	if t.State == review.StateResolved {
		fmt.Fprintf(e.stdout, "resolved:  %s by %s", t.Resolution, t.ResolvedBy)
		if t.ResolvedAt != nil {
			fmt.Fprintf(e.stdout, ", %s", t.ResolvedAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(e.stdout)
		if t.ResolutionRecordID != "" {
			fmt.Fprintf(e.stdout, "record:    %s\n", t.ResolutionRecordID)
		}
		if t.ResolutionNote != "" {
			fmt.Fprintf(e.stdout, "note:      %s\n", t.ResolutionNote)
		}
	}
}
