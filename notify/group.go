package notify

// Alert groups, decided here for any receiver. The tickets opened within
// the dispatcher's group wait for the same provider and reason, bound for
// the same destination, form one alert group once there are at least the
// threshold of them (Alertmanager's group_by and group_wait): the group's
// own row goes first, and each ticket's alert follows it (for Slack, in
// its thread). A group shows at most the detail limit of its tickets'
// alerts: the "opened" row of every later ticket is folded into the group
// (state folded, with the group's id), never delivered, and counted by the
// group's message. A folded ticket's later events are folded too, but for
// those its owner must hear of — an escalation to a new owner, a record
// found after not_sent, an acknowledgement that timed out — which are
// delivered on their own, at most the detail limit (at least one) per
// owner of a group per interval. Nothing is folded into a group whose
// message is known to be removed.
//
// What a group's message looks like, and how it is edited as its tickets
// change, is the receiver's (notify/slack renders and edits it).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// GroupConfig configures a [Grouper].
type GroupConfig struct {
	// Threshold is how many tickets, at least, opened for the same
	// provider and reason and bound for the same destination, form one
	// alert group. A ticket whose alert is due while such a group has open
	// tickets joins it. 0: never.
	Threshold int
	// DetailLimit is how many tickets of a group, at most, get their own
	// alert; the others' are folded into the group's message. It bounds
	// too the messages a folded ticket's owner gets of their own, per group
	// and per Interval (at least one). 0: none, the group's message alone.
	DetailLimit int
	// Interval is the window of the owners' own messages about a group's
	// folded tickets. Required when Threshold is set.
	Interval time.Duration
	// Destination is where a ticket of workflow and provider is delivered
	// (Slack's channel); "" for nowhere, which groups nothing. Required.
	Destination func(workflow, provider string) string
}

// Grouper decides, before a row's first attempt, whether its ticket's
// alert is part of an alert group, and whether the row is folded into its
// group instead of delivered. It is the dispatcher's, whatever its
// receiver; a nil *Grouper groups nothing.
type Grouper struct {
	outbox  *outbox.Store
	groups  *outbox.Groups
	tickets review.TicketReader
	cfg     GroupConfig
}

// NewGrouper returns the Grouper of the rows of receiver in the outbox
// over db (a pool), reading tickets through tickets. Its error names the
// missing field.
func NewGrouper(db ledger.DB, receiver string, tickets review.TicketReader, cfg GroupConfig) (*Grouper, error) {
	var errs []error
	if db == nil {
		errs = append(errs, errors.New("the alert grouper needs a database"))
	}
	if tickets == nil {
		errs = append(errs, errors.New("the alert grouper needs a reader of review tickets"))
	}
	if cfg.Destination == nil {
		errs = append(errs, errors.New("the alert grouper needs Destination, which says where a ticket is delivered"))
	}
	if cfg.Threshold < 0 || cfg.DetailLimit < 0 || cfg.Interval < 0 {
		errs = append(errs, errors.New("the alert grouper's Threshold, DetailLimit and Interval must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Grouper{outbox: outbox.NewStore(db).For(receiver), groups: outbox.NewGroups(db), tickets: tickets, cfg: cfg}, nil
}

// Fold is where a row is folded instead of delivered, and why: Group 0
// means it is delivered.
type Fold struct {
	Group int64
	Code  string
	Why   error
}

// Prepare decides for held row n, one row at a time in the order of the
// claim (so that a group's first tickets are the ones given their own
// alert), whether its alert goes in an alert group ([Grouper.group]) and
// whether it is folded into its group ([Grouper.fold]). It sets n.GroupID;
// a *[ReleaseError] gives n back to wait for its group's message.
func (g *Grouper) Prepare(ctx context.Context, n *outbox.Notification) (Fold, error) {
	if g == nil {
		return Fold{}, nil
	}
	if err := g.group(ctx, n); err != nil {
		return Fold{}, err
	}
	return g.fold(ctx, *n)
}

// fold decides whether held row n is folded into an alert group instead of
// delivered. A grouped ticket's "opened" row is delivered while the group
// has given fewer than the detail limit of its tickets their own alert;
// folded otherwise. A later row of a ticket whose first alert was folded,
// and that has no root message of its own since, is folded unless its
// owner must hear of it ([Grouper.mustHear]) and has had fewer than the
// detail limit of such messages about the group within the interval. A row
// an earlier attempt may have delivered is never folded.
func (g *Grouper) fold(ctx context.Context, n outbox.Notification) (Fold, error) {
	if n.TicketID == 0 || n.Reference != "" || n.Uncertain || len(n.SearchWindows) > 0 {
		return Fold{}, nil
	}
	if n.Kind == outbox.KindOpened {
		if n.GroupID == 0 {
			return Fold{}, nil
		}
		if live, err := g.groupLive(ctx, n.GroupID); err != nil || !live {
			return Fold{}, err // no message to count it: delivered alone
		}
		detail, err := g.groups.TakeDetail(ctx, n.GroupID, n.TicketID, g.cfg.DetailLimit)
		if err != nil || detail {
			return Fold{}, err
		}
		return Fold{Group: n.GroupID, Code: outbox.CodeOverDetailLimit, Why: fmt.Errorf(
			"alert group %d shows %d tickets' alerts in its thread already (slack.group_detail_limit); its message counts this one",
			n.GroupID, g.cfg.DetailLimit)}, nil
	}
	if outbox.IsRootKind(n.Kind) || n.OwnMessage() {
		return Fold{}, nil
	}
	group, err := g.outbox.FoldedInto(ctx, n.TicketID)
	if err != nil || group == 0 {
		return Fold{}, err
	}
	if live, err := g.groupLive(ctx, group); err != nil || !live {
		return Fold{}, err // the group's message was removed: nothing counts it any more
	}
	if r, err := g.outbox.RootOf(ctx, n); err != nil || r.Live {
		return Fold{}, err // it has a message of its own since: its thread goes on
	}
	owner, must, err := g.mustHear(ctx, n)
	if err != nil {
		return Fold{}, err
	}
	if !must {
		return Fold{Group: group, Code: outbox.CodeFoldedTicket, Why: fmt.Errorf(
			"the ticket's first alert was folded into alert group %d, whose message counts this event", group)}, nil
	}
	granted, err := g.groups.TakeOwnerMessage(ctx, n, group, owner, g.ownerMessages(), g.cfg.Interval)
	if err != nil || granted {
		return Fold{}, err
	}
	return Fold{Group: group, Code: outbox.CodeFoldedTicket, Why: fmt.Errorf(
		"%s had %d messages of their own about alert group %d's tickets within slack.group_interval (slack.group_detail_limit); the group's message counts this one",
		owner, g.ownerMessages(), group)}, nil
}

// ownerMessages is how many messages of their own about a group's folded
// tickets an owner gets per interval: the detail limit, and at least one
// even when the group shows none, so that an escalation to a new owner
// always reaches them.
func (g *Grouper) ownerMessages() int { return max(g.cfg.DetailLimit, 1) }

// groupLive reports whether alert group id's message is delivered (not
// removed): only then can it count the tickets folded into it.
func (g *Grouper) groupLive(ctx context.Context, id int64) (bool, error) {
	r, err := g.outbox.RootOf(ctx, outbox.Notification{GroupID: id})
	return r.Live, err
}

// mustHear says whether the event of row n, a ticket's, is one its owner
// must hear of even when the ticket's first alert was folded — an
// escalation to a new owner (a level step), a record found after not_sent,
// an acknowledgement that timed out (nobody holds the ticket any more) —
// and who that owner is.
func (g *Grouper) mustHear(ctx context.Context, n outbox.Notification) (owner string, must bool, err error) {
	switch n.Kind {
	case review.EventEscalated:
		ev, err := g.tickets.Event(ctx, n.EventID)
		if err != nil {
			return "", false, err
		}
		var d review.EscalatedDetails
		if err := json.Unmarshal(ev.Details, &d); err != nil {
			return "", false, fmt.Errorf("read escalation event %d: %w", n.EventID, err)
		}
		return d.Owner, d.Step == review.EscalationLevelUp, nil
	case review.EventContradicted, review.EventAckTimedOut:
		t, err := g.tickets.Ticket(ctx, n.TicketID)
		if err != nil {
			return "", false, err
		}
		return t.Owner, true, nil
	}
	return "", false, nil
}

// group decides, before the first attempt on a ticket's "opened" row n
// (one row at a time per dispatcher: the rows of its batch that it makes a
// group of are the group's when their turn comes), whether its alert is
// part of an alert group: it joins a group of its provider, reason and
// destination that still has open tickets or, when at least the threshold
// of such tickets' alerts are due and none is grouped, makes them a new
// group, whose message goes first. It sets n.GroupID, and returns a
// *[ReleaseError] when n must wait for the group's message.
func (g *Grouper) group(ctx context.Context, n *outbox.Notification) error {
	if n.GroupID != 0 && n.TicketID != 0 && n.Kind == outbox.KindOpened && n.Reference == "" && !n.Uncertain && len(n.SearchWindows) == 0 {
		// Grouped by another dispatcher's decision that committed while
		// this one's claim ran (the claim's snapshot saw the row ungrouped
		// and its group's message not yet written, its lock the row
		// grouped): the alert waits for the group's message as the alerts
		// grouped here do, rather than go out alone ahead of it.
		pending, err := g.outbox.GroupMessagePending(ctx, n.GroupID)
		if err != nil {
			return err
		}
		if pending {
			return &ReleaseError{Until: time.Now(), Err: fmt.Errorf("ticket %d is in alert group %d, whose message is not posted yet", n.TicketID, n.GroupID)}
		}
		return nil
	}
	if g.cfg.Threshold <= 0 || n.TicketID == 0 || n.Kind != outbox.KindOpened || n.GroupID != 0 ||
		n.Reference != "" || n.Uncertain || len(n.SearchWindows) > 0 {
		return nil
	}
	tickets, err := g.tickets.Summaries(ctx, []int64{n.TicketID})
	if err != nil {
		return err
	}
	if len(tickets) == 0 {
		return fmt.Errorf("%w: %d", review.ErrTicketNotFound, n.TicketID)
	}
	provider, reason := tickets[0].Provider, string(tickets[0].Reason)
	dest := g.cfg.Destination(tickets[0].Workflow, provider)
	if dest == "" {
		return nil // the receiver says there is nowhere to deliver it
	}
	// One decision at a time per destination, provider and reason, across
	// every dispatcher: two never make two groups of the same tickets.
	dec, err := g.outbox.DecideGroup(ctx, dest, provider, reason)
	if err != nil {
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	}
	defer dec.Rollback(context.WithoutCancel(ctx))
	// The tickets open now of the provider and reason, read once under the
	// decision's lock, through the ticket reader: a ticket that resolves
	// just after is seen open, as it would be were it read in the
	// decision's statement (a resolution does not take the lock). Every
	// read of the decision is one statement over these, whatever the
	// groups and tickets of the past.
	open, err := g.tickets.OpenIDs(ctx, provider, tickets[0].Reason)
	if err != nil {
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	}
	group, err := dec.OpenGroup(ctx, open)
	switch {
	case err != nil:
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	case group == 0:
		group, err = g.newGroup(ctx, dec, *n, open, dest, provider, reason)
		if err != nil || group == 0 {
			return err // too few: delivered alone (the deferred rollback ends the decision)
		}
	default:
		if err := dec.Join(ctx, *n, group); err != nil {
			return err
		}
	}
	if err := dec.Commit(ctx); err != nil {
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	}
	n.GroupID = group
	live, err := g.groupLive(ctx, group)
	if err != nil {
		return err
	}
	if !live {
		// The group's message goes first; the claim holds n until then.
		return &ReleaseError{Until: time.Now(), Err: fmt.Errorf("ticket %d joined alert group %d, whose message is not posted yet", n.TicketID, group)}
	}
	return nil
}

// newGroup makes the due, ungrouped alerts of dest, provider and reason —
// of open, the tickets open of the provider and reason — a group in the
// decision, with its message's outbox row, when there are at least the
// threshold of them, and returns its id (0: too few). The alerts held by
// other dispatchers count, and join the group when their holder decides
// (under the same lock, it finds the group); the others join now.
func (g *Grouper) newGroup(ctx context.Context, dec *outbox.GroupDecision, n outbox.Notification, open []int64, dest, provider, reason string) (int64, error) {
	rowIDs, ticketIDs, err := dec.Ungrouped(ctx, open)
	if err != nil {
		return 0, err
	}
	// The tickets' states, reasons and routes are read through the ticket
	// reader; as for the open tickets, a ticket that resolves after the
	// read is grouped, as it would have been had it resolved after the
	// decision's statement.
	tickets, err := g.tickets.Summaries(ctx, ticketIDs)
	if err != nil {
		return 0, fmt.Errorf("find the alerts to group: %w", err)
	}
	alike := map[int64]bool{}
	for _, t := range tickets {
		alike[t.ID] = t.State == review.StateOpen && string(t.Reason) == reason && t.Provider == provider &&
			g.cfg.Destination(t.Workflow, provider) == dest
	}
	var ids []int64
	for i, id := range rowIDs {
		if alike[ticketIDs[i]] {
			ids = append(ids, id)
		}
	}
	if len(ids) < g.cfg.Threshold {
		return 0, nil
	}
	return dec.NewGroup(ctx, n, ids)
}
