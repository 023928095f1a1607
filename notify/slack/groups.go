package slack

// Alert groups. The tickets opened within slack.group_wait for the same
// provider and reason, bound for the same channel, are posted as one root
// message once there are at least slack.group_threshold of them
// (Alertmanager's group_by and group_wait): counts, the first tickets, how
// to list the rest. Each ticket's own alert, with its buttons, is a reply
// in that message's thread, where its later messages go too; the group's
// message is edited as tickets join it and resolve. Every ticket event
// still has exactly one outbox row and at most one Slack message; the
// group's message is one more row, with its own dedupe key.

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

	mu      sync.Mutex
	touched map[int64]struct{}
}

// groupPage is how many alert groups [receiver.openGroup] reads at once.
const groupPage = 50

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
	group, err := rv.openGroup(ctx, dec)
	switch {
	case err != nil:
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	case group == 0:
		group, err = rv.newGroup(ctx, dec, *n, channel, provider, reason)
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

// openGroup returns the newest alert group of the decision's channel,
// provider and reason whose message is pending or in Slack and that still
// has an open ticket, or 0. It runs under the decision's lock; the tickets'
// states are read through the ticket reader, as they are committed when it
// reads: a ticket that resolves just after is seen open, as it would be
// were it read in the decision's statement (a resolution does not take the
// lock).
func (rv *receiver) openGroup(ctx context.Context, dec *outbox.GroupDecision) (int64, error) {
	for before := int64(0); ; {
		page, err := dec.Groups(ctx, before, groupPage)
		if err != nil {
			return 0, err
		}
		if len(page) == 0 {
			return 0, nil
		}
		var ids []int64
		for _, m := range page {
			ids = append(ids, m.Tickets...)
		}
		tickets, err := rv.tickets.Summaries(ctx, ids)
		if err != nil {
			return 0, err
		}
		open := map[int64]bool{}
		for _, t := range tickets {
			open[t.ID] = t.State == review.StateOpen
		}
		for _, m := range page {
			if slices.ContainsFunc(m.Tickets, func(id int64) bool { return open[id] }) {
				return m.Group, nil
			}
		}
		before = page[len(page)-1].Group
	}
}

// newGroup makes the due, ungrouped alerts of channel, provider and reason
// a group in the decision, with its message's outbox row, when there are
// at least the threshold of them, and returns its id (0: too few). The
// alerts held by other dispatchers count, and join the group when their
// holder decides (under the same lock, it finds the group); the others
// join now.
func (rv *receiver) newGroup(ctx context.Context, dec *outbox.GroupDecision, n outbox.Notification, channel, provider, reason string) (int64, error) {
	rowIDs, ticketIDs, err := dec.Ungrouped(ctx)
	if err != nil {
		return 0, err
	}
	// The tickets' states, reasons and routes are read through the ticket
	// reader; as in openGroup, a ticket that resolves after the read is
	// grouped, as it would have been had it resolved after the decision's
	// statement.
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
// group as it is then. An edit refused for Slack's rate limit, or not made
// while its channel waits for one, stays due for the next call.
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
		case errors.Is(err, errRateLimited):
		default:
			rv.logger.Warn("notify: the alert group's message was not brought up to date", "group_id", group, "error", err)
			continue
		}
		rv.groups.mu.Lock()
		rv.groups.touched[group] = struct{}{}
		rv.groups.mu.Unlock()
	}
}

// refreshGroup edits alert group id's message, if it is in Slack, to the
// group as it is now.
func (rv *receiver) refreshGroup(ctx context.Context, id int64) error {
	g, err := rv.outbox.RootOf(ctx, outbox.Notification{GroupID: id})
	if err != nil || !g.Live {
		return err
	}
	row := outbox.Notification{GroupID: id, Kind: outbox.KindGroupOpened, DedupeKey: g.DedupeKey}
	post, err := rv.composers.group.Compose(ctx, rv.db, row)
	if err != nil {
		return err
	}
	return rv.slack.rateLimited(g.Channel, rv.slack.update(ctx, g.Channel, g.TS, post.Text, post.Blocks, message.Metadata(g.DedupeKey, subjectOf(row))))
}
