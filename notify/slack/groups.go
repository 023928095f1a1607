package slack

// Alert groups in Slack. Which tickets form a group, when a group's
// message is due and which rows are folded into it are decided upstream,
// by the dispatcher's [notify.Grouper], for any receiver; here is how Slack
// shows a group: the tickets opened within slack.group_wait for the same
// provider and reason, bound for the same channel, are posted as one root
// message (counts, the first tickets, how to list the rest); each
// ticket's own alert, with its buttons, is a reply in that message's
// thread, where its later messages go too; the group's message is edited
// as tickets join it and resolve, at most once per slack.group_interval
// across every dispatcher. A folded ticket's events its owner must hear of
// are posted as the ticket's root message (it stands in for the alert it
// never had, buttons included). So a channel's messages per minute are
// bounded by the configuration, whatever the ticket rate. Every ticket
// event still has exactly one outbox row — posted, folded or skipped — and
// at most one Slack message; the group's message is one more row, with its
// own dedupe key.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
)

// alertGroups is what the receiver keeps of alert groups, whose decision
// is the dispatcher's ([notify.Grouper]): the interval between edits of a
// group's message, and the groups whose message is out of date.
type alertGroups struct {
	// rows is the store of the groups; interval is [Config.GroupInterval].
	rows     *outbox.Groups
	interval time.Duration

	mu      sync.Mutex
	touched map[int64]struct{}
}

// Defaults of [Config.GroupDetailLimit] and [Config.GroupInterval].
const (
	defaultGroupDetailLimit = 10
	defaultGroupInterval    = time.Minute
)

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
// ([outbox.Groups.TakeGroupEdit]); else [errGroupEditNotDue].
func (rv *receiver) refreshGroup(ctx context.Context, id int64) (err error) {
	g, err := rv.outbox.RootOf(ctx, outbox.Notification{GroupID: id})
	if err != nil || !g.Live {
		return err
	}
	edit, due, err := rv.groups.rows.TakeGroupEdit(ctx, id, rv.groups.interval)
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
			if gerr := rv.groups.rows.GiveBackGroupEdit(context.WithoutCancel(ctx), edit); gerr != nil {
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
