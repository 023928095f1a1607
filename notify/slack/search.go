package slack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
)

// searchBounds bound the searches after uncertain attempts: pages of
// history read per window at most, and the margin each window is widened
// by ([Config.SearchPages], [Config.SearchMargin]).
type searchBounds struct {
	pages  int
	margin time.Duration
}

// errSearchInconclusive: a window holds more history than the search reads.
var errSearchInconclusive = errors.New("search inconclusive")

// search looks for row n's message in its search windows: where, and
// between which times, earlier attempts whose result is unknown may have
// posted it, each widened by the margin. Nothing after a window is read,
// so no amount of later chatter makes a search longer. A window whose
// attempt recorded no target is searched where the message goes now, r
// being the ticket's root. Found, it sets
// res.ts and n's Channel and ThreadTS to where the message is. Not found,
// the windows that had closed before the search began are dropped for
// good: no message can appear in them any more.
func (rv *receiver) search(ctx context.Context, n *outbox.Notification, r outbox.Root, res *attemptResult) error {
	began := time.Now()
	windows := slices.Clone(n.SearchWindows)
	for i, w := range windows {
		if w.Channel == "" {
			channel, threadTS, _, err := rv.where(ctx, *n, r)
			if err != nil {
				return err
			}
			windows[i].Channel, windows[i].ThreadTS = channel, threadTS
		}
	}
	for _, w := range mergeWindows(windows, rv.bounds.margin) {
		ts, err := rv.searchWindow(ctx, *n, w)
		if err != nil {
			return err
		}
		if ts != "" {
			n.Destination, n.ThreadTS = w.Channel, w.ThreadTS
			res.ts, res.adopted = ts, true
			return nil
		}
	}
	closedBefore := began.Add(-rv.bounds.margin)
	if err := rv.outbox.Searched(ctx, *n, closedBefore); err != nil {
		return err
	}
	n.SearchWindows = slices.DeleteFunc(n.SearchWindows, func(w outbox.SearchWindow) bool { return w.Until.Before(closedBefore) })
	return nil
}

// mergeWindows joins the windows of one channel and thread that overlap
// once widened by margin, so that no part of the history is read twice.
func mergeWindows(windows []outbox.SearchWindow, margin time.Duration) []outbox.SearchWindow {
	sorted := slices.Clone(windows)
	slices.SortFunc(sorted, func(a, b outbox.SearchWindow) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.ThreadTS, b.ThreadTS), a.From.Compare(b.From))
	})
	var out []outbox.SearchWindow
	for _, w := range sorted {
		if last := len(out) - 1; last >= 0 && out[last].Channel == w.Channel && out[last].ThreadTS == w.ThreadTS &&
			!w.From.Add(-margin).After(out[last].Until.Add(margin)) {
			if w.Until.After(out[last].Until) {
				out[last].Until = w.Until
			}
			continue
		}
		out = append(out, w)
	}
	return out
}

// searchWindow looks for row n's message in window w, widened by the
// margin: the thread's replies, or the channel's history, between oldest
// and latest. It returns the message's ts, or "" when the window has no
// such message. A window with more messages than the search reads is
// inconclusive: retried once it has closed (a slow post may still land
// in it), then parked for a person.
func (rv *receiver) searchWindow(ctx context.Context, n outbox.Notification, w outbox.SearchWindow) (string, error) {
	oldest, latest := slackTS(w.From.Add(-rv.bounds.margin)), slackTS(w.Until.Add(rv.bounds.margin))
	cursor := ""
	for range rv.bounds.pages {
		if err := rv.slack.pace(ctx, w.Channel); err != nil {
			return "", err
		}
		var (
			msgs []slack.Message
			more bool
			err  error
		)
		method := "conversations.history"
		if w.ThreadTS != "" {
			method = "conversations.replies"
			msgs, more, cursor, err = rv.slack.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: w.Channel, Timestamp: w.ThreadTS, Oldest: oldest, Latest: latest, Inclusive: true,
				Limit: 200, Cursor: cursor, IncludeAllMetadata: true,
			})
			if slackCode(err) == "thread_not_found" {
				// The thread's root was deleted, and whatever was posted in
				// it is gone with it.
				err := rv.threadRemoved(ctx, n, w.Channel, w.ThreadTS)
				return "", err
			}
		} else {
			var resp *slack.GetConversationHistoryResponse
			resp, err = rv.slack.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: w.Channel, Oldest: oldest, Latest: latest, Inclusive: true,
				Limit: 200, Cursor: cursor, IncludeAllMetadata: true,
			})
			if resp != nil {
				msgs, more, cursor = resp.Messages, resp.HasMore, resp.ResponseMetaData.NextCursor
			}
		}
		if err != nil {
			return "", slackError(method, err, true)
		}
		for _, m := range msgs {
			if message.Carries(m, n.DedupeKey) {
				return m.Timestamp, nil
			}
		}
		if !more || cursor == "" {
			return "", nil
		}
	}
	where := "channel " + w.Channel
	if w.ThreadTS != "" {
		where = fmt.Sprintf("the thread %s of channel %s", w.ThreadTS, w.Channel)
	}
	from, until := w.From.Add(-rv.bounds.margin).UTC(), w.Until.Add(rv.bounds.margin).UTC()
	if closes := until; time.Now().Before(closes) {
		return "", &notify.DeliveryError{Step: "search", Failure: notify.FailureTransient, Delay: time.Until(closes),
			Err: fmt.Errorf("%w: more than %d messages in %s since %s; searching again once the window closes at %s",
				errSearchInconclusive, rv.bounds.pages*200, where, from.Format(time.RFC3339), until.Format(time.RFC3339))}
	}
	return "", &notify.DeliveryError{Step: "search", Failure: notify.FailurePermanent, Code: outbox.CodeSearchInconclusive,
		Err: fmt.Errorf("%w: an attempt may have posted this message, and %s holds more than %d messages between %s and %s, "+
			"none of them it; look there for the alert of ticket %d: if it is there, close this row with "+
			"`sweeper outbox dismiss %d --by NAME --note TEXT`; if not, post it with `sweeper outbox replay %d --by NAME --not-posted`",
			errSearchInconclusive, where, rv.bounds.pages*200, from.Format(time.RFC3339), until.Format(time.RFC3339), n.TicketID, n.ID, n.ID)}
}

// slackTS formats t as a Slack timestamp: seconds, a dot, microseconds.
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}
