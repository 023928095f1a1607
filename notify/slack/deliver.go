package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// attemptResult is what a successful attempt found or did.
type attemptResult struct {
	ts      string
	posted  bool
	adopted bool
	// rootRemoved, for a reply in Slack, is the ticket's root message that
	// turned out removed when it was to be edited: the row is marked sent
	// together with the event that posts a new root.
	rootRemoved *outbox.Root
	// shown, for an incident's row, is the text this attempt posted or
	// edited its root and closing reply to.
	shown outbox.Shown
}

// attempt delivers held row n: it searches for the message first where
// and when an earlier attempt may have posted it, posts it otherwise — in
// the thread of the ticket's root message, or as a new root when the
// ticket has none — and edits the root for a reply. It updates n's
// Channel, ThreadTS and TS as it records them.
func (rv *receiver) attempt(ctx context.Context, n *outbox.Notification, log *slog.Logger) (attemptResult, error) {
	var res attemptResult
	r, err := rv.outbox.RootOf(ctx, *n)
	if err != nil {
		return res, err
	}
	res.ts = n.Reference
	if res.ts == "" && len(n.SearchWindows) > 0 {
		if err := rv.search(ctx, n, r, &res); err != nil {
			return res, err
		}
	}

	var post *message.Post
	for res.ts == "" {
		if err := rv.target(ctx, n, r); err != nil {
			return res, err
		}
		if post, err = rv.compose(ctx, *n); err != nil {
			return res, err
		}
		ts, err := rv.post(ctx, n, *post)
		if n.ThreadTS != "" && slackCode(err) == "thread_not_found" {
			// A person deleted the root message (Slack refused the reply,
			// so nothing was posted): this message becomes the new root.
			if err := rv.threadRemoved(ctx, *n, n.Destination, n.ThreadTS); err != nil {
				return res, err
			}
			log.Warn("notify: the ticket's root message was removed from Slack; posting a new root", "channel", n.Destination, "ts", n.ThreadTS)
			r = outbox.Root{Removed: true}
			continue
		}
		if err != nil {
			return res, err
		}
		res.ts, res.posted = ts, true
		if n.IncidentID != 0 && n.ThreadTS == "" {
			res.shown.Root = post.Text
		} else if n.IncidentID != 0 {
			res.shown.Reply = post.Text
		}
	}

	if n.ThreadTS == "" || !r.Live {
		return res, nil // a root message, or a reply with no root left to edit
	}
	if post == nil {
		if post, err = rv.compose(ctx, *n); err != nil {
			return res, err
		}
	}
	if post.RootEdit == nil {
		return res, nil
	}
	if n.Reference == "" {
		// The reply is in Slack: record it before the edit, so that a
		// failed edit is retried alone.
		if err := rv.outbox.MarkPosted(ctx, *n, n.Destination, res.ts); err != nil {
			return res, err
		}
		n.Reference = res.ts
		res.posted = false // recorded: no longer at risk of a second post
	}
	err = rv.slack.update(ctx, r.Channel, r.TS, post.RootEdit.Text, post.RootEdit.Blocks, message.Metadata(r.DedupeKey, subjectOf(*n)))
	if _, paced := errors.AsType[*notify.ReleaseError](err); paced {
		return res, err
	}
	if slackCode(err) == "message_not_found" {
		log.Warn("notify: the ticket's root message was removed from Slack; a new root follows", "channel", r.Channel, "ts", r.TS)
		res.rootRemoved = &r
		return res, nil
	}
	if err != nil {
		return res, slackError("chat.update", err, true)
	}
	if n.IncidentID != 0 {
		res.shown.Root = post.RootEdit.Text
	}
	return res, nil
}

// threadRemoved records that the thread at channel and threadTS, where
// row n's message was to go, is gone from Slack: its root is the root of
// n's ticket or incident or, for a grouped ticket's alert, of its group.
func (rv *receiver) threadRemoved(ctx context.Context, n outbox.Notification, channel, threadTS string) error {
	if _, err := rv.outbox.MarkRemoved(ctx, n, channel, threadTS); err != nil {
		return err
	}
	if n.GroupID != 0 && n.TicketID != 0 {
		if _, err := rv.outbox.MarkRemoved(ctx, outbox.Notification{GroupID: n.GroupID}, channel, threadTS); err != nil {
			return err
		}
	}
	return nil
}

// target decides where held row n's message goes now, given the ticket's
// root r, and records it before any post, so that a search after an
// unknown result looks where the post went. The "opened" event, and the
// message of any other event when the ticket has no live root, is a root
// message in the channel configured now; the rest go in the root's thread.
func (rv *receiver) target(ctx context.Context, n *outbox.Notification, r outbox.Root) error {
	channel, threadTS, newRoot, err := rv.where(ctx, *n, r)
	if err != nil {
		return err
	}
	n.NewRoot = newRoot
	if channel == n.Destination && threadTS == n.ThreadTS {
		return nil
	}
	if err := rv.outbox.RecordTarget(ctx, *n, channel, threadTS); err != nil {
		return err
	}
	n.Destination, n.ThreadTS = channel, threadTS
	return nil
}

// where says where row n's message goes now, given the ticket's root r,
// and why it is a new root if it is one (see [outbox.Notification.NewRoot]).
func (rv *receiver) where(ctx context.Context, n outbox.Notification, r outbox.Root) (channel, threadTS, newRoot string, err error) {
	if !outbox.IsRootKind(n.Kind) && r.Live {
		return r.Channel, r.Thread, "", nil
	}
	if n.IsGroupMessage() {
		channel, err := rv.groups.rows.GroupChannel(ctx, n.GroupID)
		return channel, "", "", err
	}
	if n.Kind == outbox.KindOpened && n.GroupID != 0 {
		// A grouped ticket's alert goes in its group's thread, while the
		// group's message is there.
		g, err := rv.outbox.RootOf(ctx, outbox.Notification{GroupID: n.GroupID})
		if err != nil {
			return "", "", "", err
		}
		if g.Live {
			return g.Channel, g.TS, "", nil
		}
	}
	var workflow, provider string
	if n.IncidentID != 0 {
		// An incident is the provider's: its channel, or the default.
		provider, err = rv.incidents.rows.IncidentProvider(ctx, n.IncidentID)
	} else {
		workflow, provider, err = rv.ticketRoute(ctx, n.TicketID)
	}
	if err != nil {
		return "", "", "", err
	}
	if channel = rv.channel(workflow, provider); channel == "" {
		return "", "", "", &notify.DeliveryError{Step: "route", Failure: notify.FailurePermanent, Code: outbox.CodeNoChannel,
			Err: fmt.Errorf("no Slack channel for workflow %q, provider %q", workflow, provider)}
	}
	switch {
	case n.IncidentID != 0 && n.Kind == outbox.KindIncidentOpened:
	case n.Kind == outbox.KindRootRemoved || (n.Kind != outbox.KindOpened && r.Removed):
		newRoot = message.NewRootRemoved
	case n.Kind != outbox.KindOpened:
		newRoot = message.NewRootUndelivered
		if n.TicketID == 0 {
			break
		}
		if group, err := rv.outbox.FoldedInto(ctx, n.TicketID); err != nil {
			return "", "", "", err
		} else if group != 0 {
			newRoot = message.NewRootFolded
		}
	}
	return channel, "", newRoot, nil
}

// compose asks the composer for held row n's message.
func (rv *receiver) compose(ctx context.Context, n outbox.Notification) (*message.Post, error) {
	composer := rv.composers.ticket
	switch {
	case n.IncidentID != 0:
		composer = rv.composers.incident
	case n.IsGroupMessage():
		composer = rv.composers.group
	}
	post, err := composer.Compose(ctx, rv.db, n)
	if err != nil {
		return nil, &notify.DeliveryError{Step: "compose", Failure: notify.FailureTransient, Err: err}
	}
	if post.Text == "" {
		return nil, &notify.DeliveryError{Step: "compose", Failure: notify.FailurePermanent, Code: "no_text", Err: errors.New("the composer gave no text")}
	}
	return &post, nil
}

// errNoTS: Slack said ok without saying where the message is.
var errNoTS = errors.New("answered ok without the message's ts")

// post posts held row n's message p where n says, and returns its ts. A
// post Slack answered ok without a ts is uncertain, as one it did not
// answer: the message may be there, and is searched for.
func (rv *receiver) post(ctx context.Context, n *outbox.Notification, p message.Post) (string, error) {
	if err := rv.slack.pace(ctx, n.Destination); err != nil {
		return "", err
	}
	opts := []slack.MsgOption{slack.MsgOptionText(p.Text, false), slack.MsgOptionMetadata(message.Metadata(n.DedupeKey, subjectOf(*n)))}
	if len(p.Blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(p.Blocks...))
	}
	if n.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(n.ThreadTS))
		if p.Broadcast {
			opts = append(opts, slack.MsgOptionBroadcast())
		}
	}
	channel, ts, err := rv.slack.api.PostMessageContext(ctx, n.Destination, opts...)
	if err != nil {
		return "", slackError("chat.postMessage", err, false)
	}
	if ts == "" {
		return "", &notify.DeliveryError{Step: "chat.postMessage", Failure: notify.FailureUncertain, Err: errNoTS}
	}
	if n.ThreadTS == "" {
		rv.slack.metrics.SlackPosted(metrics.SlackRoot)
	} else {
		rv.slack.metrics.SlackPosted(metrics.SlackReply)
	}
	if channel != "" {
		n.Destination = channel // Slack answers with the id when given a name
	}
	return ts, nil
}

// subjectOf is what row n's message is about, as its metadata names it:
// an alert group's own message, an incident's, or else a ticket's.
func subjectOf(n outbox.Notification) message.Subject {
	switch {
	case n.IsGroupMessage():
		return message.AboutGroup(n.GroupID)
	case n.IncidentID != 0:
		return message.AboutIncident(n.IncidentID)
	}
	return message.AboutTicket(n.TicketID)
}

// ticketRoute is what picks a ticket's channel: its workflow and provider,
// from the evidence snapshot.
func (rv *receiver) ticketRoute(ctx context.Context, ticketID int64) (workflow, provider string, err error) {
	s, err := rv.tickets.Summaries(ctx, []int64{ticketID})
	if err != nil {
		return "", "", err
	}
	if len(s) == 0 {
		return "", "", fmt.Errorf("%w: %d", review.ErrTicketNotFound, ticketID)
	}
	return s[0].Workflow, s[0].Provider, nil
}

// composers say what each row's message is: a ticket's, an incident's, an
// alert group's own.
type composers struct {
	ticket, incident, group Composer
}
