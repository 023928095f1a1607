package slack

// Alert groups. The tickets opened within slack.group_wait for the same
// provider and reason, bound for the same channel, are posted as one root
// message once there are at least slack.group_threshold of them
// (Alertmanager's group_by and group_wait): counts, the first tickets, how
// to list the rest. Each ticket's own alert, with its buttons, is a reply
// in that message's thread, where its later messages go too; the group's
// message is edited as tickets join it and resolve, at most once per
// slack.group_interval across every dispatcher.
//
// A group's thread holds at most slack.group_detail_limit tickets' alerts:
// the "opened" row of every later ticket is folded into the group (state
// folded, with the group's id), never posted, and counted by the group's
// message, which says how to list them all. A folded ticket's later events
// are folded too, but for those its owner must hear of — an escalation to
// a new owner, a record found after not_sent, an acknowledgement that
// timed out — which are posted as the
// ticket's root message (it stands in for the alert it never had, buttons
// included; its later events go in its thread as any ticket's), at most
// slack.group_detail_limit (at least one) per owner of a group per
// slack.group_interval. Nothing is folded into a group whose message is
// known to be removed from Slack.
// So a channel's messages per minute are bounded by the configuration,
// whatever the ticket rate. Every ticket event still has exactly one
// outbox row — posted, folded or skipped — and at most one Slack message;
// the group's message is one more row, with its own dedupe key.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// alertGroups is the receiver's grouping of alerts: the threshold, and the
// groups whose message is out of date.
type alertGroups struct {
	// threshold is [Config.GroupThreshold]; 0 groups nothing.
	threshold int
	// detail is [Config.GroupDetailLimit], 0 for none; interval
	// [Config.GroupInterval].
	detail   int
	interval time.Duration

	mu      sync.Mutex
	touched map[int64]struct{}
	// folds are the held rows [receiver.Prepare] decided to fold, by row
	// and attempt, until their delivery.
	folds map[foldKey]folding
}

// foldKey is one claim of one row.
type foldKey struct {
	row      int64
	attempts int
}

// fold notes what Prepare decided for held row n: f, or nothing to fold.
func (g *alertGroups) fold(n outbox.Notification, f folding) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f.group == 0 {
		delete(g.folds, foldKey{n.ID, n.Attempts})
		return
	}
	g.folds[foldKey{n.ID, n.Attempts}] = f
}

// forgetFolds forgets every fold noted and not taken.
func (g *alertGroups) forgetFolds() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.folds)
}

// folded takes what Prepare decided for held row n: where it is folded,
// or nothing.
func (g *alertGroups) folded(n outbox.Notification) folding {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := foldKey{n.ID, n.Attempts}
	f := g.folds[k]
	delete(g.folds, k)
	return f
}

// Defaults of [Config.GroupDetailLimit] and [Config.GroupInterval].
const (
	defaultGroupDetailLimit = 10
	defaultGroupInterval    = time.Minute
)

// folding is where a row is folded instead of posted, and why: group 0
// means it is posted.
type folding struct {
	group int64
	code  string
	why   error
}

// fold decides whether held row n is folded into an alert group instead of
// posted. A grouped ticket's "opened" row is posted in the group's thread
// while the group has given fewer than the detail limit of its tickets
// their own alert; folded otherwise. A later row of a ticket whose first
// alert was folded, and that has no root message of its own since, is
// folded unless its owner must hear of it ([receiver.mustHear]) and has had
// fewer than the detail limit of such messages about the group within the
// interval. A row an earlier attempt may have posted is never folded.
func (rv *receiver) fold(ctx context.Context, n outbox.Notification) (folding, error) {
	if n.TicketID == 0 || n.TS != "" || n.Uncertain || len(n.SearchWindows) > 0 {
		return folding{}, nil
	}
	if n.Kind == outbox.KindOpened {
		if n.GroupID == 0 {
			return folding{}, nil
		}
		if live, err := rv.groupLive(ctx, n.GroupID); err != nil || !live {
			return folding{}, err // no message to count it: posted alone, as where() says
		}
		detail, err := rv.outbox.TakeDetail(ctx, n.GroupID, n.TicketID, rv.groups.detail)
		if err != nil || detail {
			return folding{}, err
		}
		return folding{group: n.GroupID, code: outbox.CodeOverDetailLimit, why: fmt.Errorf(
			"alert group %d shows %d tickets' alerts in its thread already (slack.group_detail_limit); its message counts this one",
			n.GroupID, rv.groups.detail)}, nil
	}
	if outbox.IsRootKind(n.Kind) || n.OwnMessage() {
		return folding{}, nil
	}
	group, err := rv.outbox.FoldedInto(ctx, n.TicketID)
	if err != nil || group == 0 {
		return folding{}, err
	}
	if live, err := rv.groupLive(ctx, group); err != nil || !live {
		return folding{}, err // the group's message was removed: nothing counts it any more
	}
	if r, err := rv.outbox.RootOf(ctx, n); err != nil || r.Live {
		return folding{}, err // it has a message of its own since: its thread goes on
	}
	owner, must, err := rv.mustHear(ctx, n)
	if err != nil {
		return folding{}, err
	}
	if !must {
		return folding{group: group, code: outbox.CodeFoldedTicket, why: fmt.Errorf(
			"the ticket's first alert was folded into alert group %d, whose message counts this event", group)}, nil
	}
	granted, err := rv.outbox.TakeOwnerMessage(ctx, n, group, owner, rv.groups.ownerMessages(), rv.groups.interval)
	if err != nil || granted {
		return folding{}, err
	}
	return folding{group: group, code: outbox.CodeFoldedTicket, why: fmt.Errorf(
		"%s had %d messages of their own about alert group %d's tickets within slack.group_interval (slack.group_detail_limit); the group's message counts this one",
		owner, rv.groups.ownerMessages(), group)}, nil
}

// ownerMessages is how many messages of their own about a group's folded
// tickets an owner gets per interval: the detail limit, and at least one
// even when the group's thread holds none, so that an escalation to a new
// owner always reaches them.
func (g *alertGroups) ownerMessages() int { return max(g.detail, 1) }

// groupLive reports whether alert group id's message is in Slack (not
// removed): only then can it count the tickets folded into it.
func (rv *receiver) groupLive(ctx context.Context, id int64) (bool, error) {
	g, err := rv.outbox.RootOf(ctx, outbox.Notification{GroupID: id})
	return g.Live, err
}

// mustHear says whether the event of row n, a ticket's, is one its owner
// must hear of even when the ticket's first alert was folded — an
// escalation to a new owner (a level step), a record found after not_sent,
// an acknowledgement that timed out (nobody holds the ticket any more) —
// and who that owner is.
func (rv *receiver) mustHear(ctx context.Context, n outbox.Notification) (owner string, must bool, err error) {
	switch n.Kind {
	case review.EventEscalated:
		ev, err := rv.tickets.Event(ctx, n.EventID)
		if err != nil {
			return "", false, err
		}
		var d review.EscalatedDetails
		if err := json.Unmarshal(ev.Details, &d); err != nil {
			return "", false, fmt.Errorf("read escalation event %d: %w", n.EventID, err)
		}
		return d.Owner, d.Step == review.EscalationLevelUp, nil
	case review.EventContradicted, review.EventAckTimedOut:
		t, err := rv.tickets.Ticket(ctx, n.TicketID)
		if err != nil {
			return "", false, err
		}
		return t.Owner, true, nil
	}
	return "", false, nil
}

// group decides, before the first attempt on a ticket's "opened" row n
// (one row at a time per dispatcher: the rows of its batch that it makes a
// group of are the group's when their turn comes), whether its alert goes
// in an alert group's thread: it joins a group of its provider, reason and
// channel that still has open tickets or, when at least the threshold of
// such tickets' alerts are due and none is grouped, makes them a new group,
// whose message goes first. It sets n.GroupID, and returns a
// *[notify.ReleaseError] when n must wait for the group's message.
func (rv *receiver) group(ctx context.Context, n *outbox.Notification) error {
	if n.GroupID != 0 && n.TicketID != 0 && n.Kind == outbox.KindOpened && n.TS == "" && !n.Uncertain && len(n.SearchWindows) == 0 {
		// Grouped by another dispatcher's decision that committed while
		// this one's claim ran (the claim's snapshot saw the row ungrouped
		// and its group's message not yet written, its lock the row
		// grouped): the alert waits for the group's message as the alerts
		// grouped here do, rather than go out alone ahead of it.
		pending, err := rv.outbox.GroupMessagePending(ctx, n.GroupID)
		if err != nil {
			return err
		}
		if pending {
			return &notify.ReleaseError{Until: time.Now(), Err: fmt.Errorf("ticket %d is in alert group %d, whose message is not posted yet", n.TicketID, n.GroupID)}
		}
		return nil
	}
	if rv.groups.threshold <= 0 || n.TicketID == 0 || n.Kind != outbox.KindOpened || n.GroupID != 0 ||
		n.TS != "" || n.Uncertain || len(n.SearchWindows) > 0 {
		return nil
	}
	tickets, err := rv.tickets.Summaries(ctx, []int64{n.TicketID})
	if err != nil {
		return err
	}
	if len(tickets) == 0 {
		return fmt.Errorf("%w: %d", review.ErrTicketNotFound, n.TicketID)
	}
	provider, reason := tickets[0].Provider, string(tickets[0].Reason)
	channel := rv.channel(tickets[0].Workflow, provider)
	if channel == "" {
		return nil // where() parks it
	}
	// One decision at a time per channel, provider and reason, across
	// every dispatcher: two never make two groups of the same tickets.
	dec, err := rv.outbox.DecideGroup(ctx, channel, provider, reason)
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
	open, err := rv.tickets.OpenIDs(ctx, provider, tickets[0].Reason)
	if err != nil {
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	}
	group, err := dec.OpenGroup(ctx, open)
	switch {
	case err != nil:
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	case group == 0:
		group, err = rv.newGroup(ctx, dec, *n, open, channel, provider, reason)
		if err != nil || group == 0 {
			return err // too few: posted alone (the deferred rollback ends the decision)
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
	g, err := rv.outbox.RootOf(ctx, outbox.Notification{GroupID: group})
	if err != nil {
		return err
	}
	if !g.Live {
		// The group's message goes first; the claim holds n until then.
		return &notify.ReleaseError{Until: time.Now(), Err: fmt.Errorf("ticket %d joined alert group %d, whose message is not posted yet", n.TicketID, group)}
	}
	return nil
}

// newGroup makes the due, ungrouped alerts of channel, provider and reason
// — of open, the tickets open of the provider and reason — a group in the
// decision, with its message's outbox row, when there are at least the
// threshold of them, and returns its id (0: too few). The alerts held by
// other dispatchers count, and join the group when their holder decides
// (under the same lock, it finds the group); the others join now.
func (rv *receiver) newGroup(ctx context.Context, dec *outbox.GroupDecision, n outbox.Notification, open []int64, channel, provider, reason string) (int64, error) {
	rowIDs, ticketIDs, err := dec.Ungrouped(ctx, open)
	if err != nil {
		return 0, err
	}
	// The tickets' states, reasons and routes are read through the ticket
	// reader; as for the open tickets, a ticket that resolves after the
	// read is grouped, as it would have been had it resolved after the
	// decision's statement.
	tickets, err := rv.tickets.Summaries(ctx, ticketIDs)
	if err != nil {
		return 0, fmt.Errorf("find the alerts to group: %w", err)
	}
	alike := map[int64]bool{}
	for _, t := range tickets {
		alike[t.ID] = t.State == review.StateOpen && string(t.Reason) == reason && t.Provider == provider &&
			rv.channel(t.Workflow, provider) == channel
	}
	var ids []int64
	for i, id := range rowIDs {
		if alike[ticketIDs[i]] {
			ids = append(ids, id)
		}
	}
	if len(ids) < rv.groups.threshold {
		return 0, nil
	}
	return dec.NewGroup(ctx, n, ids)
}

// touchGroup notes that the alert group of row n's ticket, if it has one,
// changed (one of its tickets' messages went out or was skipped): its
// message is brought up to date once at the end of the dispatch, however
// many of its tickets changed.
func (rv *receiver) touchGroup(ctx context.Context, n outbox.Notification) {
	group, err := rv.outbox.TicketGroup(ctx, n.TicketID)
	if err != nil || group == 0 {
		return
	}
	rv.groups.mu.Lock()
	rv.groups.touched[group] = struct{}{}
	rv.groups.mu.Unlock()
}

// refreshGroups edits the message of each alert group touched since the
// last call, if it is in Slack, to the group as it is now. An edit can be
// made again, so a failed one is only logged; a later change shows the
// group as it is then. An edit refused for Slack's rate limit, not made
// while its channel waits for one, or not due yet (the message was edited
// within slack.group_interval), stays due for a later call.
func (rv *receiver) refreshGroups(ctx context.Context) {
	rv.groups.mu.Lock()
	touched := rv.groups.touched
	rv.groups.touched = map[int64]struct{}{}
	rv.groups.mu.Unlock()
	for group := range touched {
		err := rv.refreshGroup(ctx, group)
		var rerr *notify.ReleaseError
		switch {
		case err == nil:
			continue
		case errors.As(err, &rerr):
			rv.logger.Debug("notify: the alert group's message waits for its channel", "group_id", group, "error", err)
		case errors.Is(err, errRateLimited), errors.Is(err, errGroupEditNotDue):
		default:
			rv.logger.Warn("notify: the alert group's message was not brought up to date", "group_id", group, "error", err)
			continue
		}
		rv.groups.mu.Lock()
		rv.groups.touched[group] = struct{}{}
		rv.groups.mu.Unlock()
	}
}

// errGroupEditNotDue: the group's message was edited, by this dispatcher
// or another, within the last slack.group_interval; the edit waits.
var errGroupEditNotDue = errors.New("the alert group's message was edited within slack.group_interval")

// refreshGroup edits alert group id's message, if it is in Slack, to the
// group as it is now, when nobody has edited it within the interval
// ([outbox.Store.TakeGroupEdit]); else [errGroupEditNotDue].
func (rv *receiver) refreshGroup(ctx context.Context, id int64) (err error) {
	g, err := rv.outbox.RootOf(ctx, outbox.Notification{GroupID: id})
	if err != nil || !g.Live {
		return err
	}
	edit, due, err := rv.outbox.TakeGroupEdit(ctx, id, rv.groups.interval)
	if err != nil {
		return err
	}
	if !due {
		return errGroupEditNotDue
	}
	defer func() {
		// An edit refused for the rate limit, or not made while the
		// channel waits for one, made no call: the next may be made as
		// soon as the channel allows, not an interval later.
		if _, paced := errors.AsType[*notify.ReleaseError](err); paced || errors.Is(err, errRateLimited) {
			if gerr := rv.outbox.GiveBackGroupEdit(context.WithoutCancel(ctx), edit); gerr != nil {
				err = errors.Join(err, gerr)
			}
		}
	}()
	row := outbox.Notification{GroupID: id, Kind: outbox.KindGroupOpened, DedupeKey: g.DedupeKey}
	post, err := rv.composers.group.Compose(ctx, rv.db, row)
	if err != nil {
		return err
	}
	return rv.slack.rateLimited(g.Channel, rv.slack.update(ctx, g.Channel, g.TS, post.Text, post.Blocks, message.Metadata(g.DedupeKey, subjectOf(row))))
}
