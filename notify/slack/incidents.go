package slack

// Provider incidents in Slack: one message per outage, not one per
// operation. The incident's start (a provider going down for the cluster)
// posts its root message; its end edits the root and replies in its
// thread with what happened to the provider's operations since it began.
// Both are outbox rows, delivered under the same rules as ticket alerts;
// for an hour after the end, the root and the reply are edited as the
// provider's backlog settles, so that neither is left with the counts of
// the moment the provider came back.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
)

// incidentRefreshEvery is how often, by default, a dispatcher brings the
// messages of an incident that ended within the last hour up to date,
// while its counts change: the provider's backlog settles after it is back
// (Config.IncidentRefresh).
const incidentRefreshEvery = 30 * time.Second

// incidentLease is how long a dispatcher holds an incident to bring its
// messages up to date; incidentEditTime is the most it spends on Slack in
// that time (the channel's pace and both edits), well below the lease: an
// edit not answered by then is given up long before another dispatcher
// may take the incident and edit it with newer counts.
const (
	incidentLease    = time.Minute
	incidentEditTime = 15 * time.Second
)

// incidentRefresh is the receiver's pace of incident refreshes: at most
// every every, under the name owner.
type incidentRefresh struct {
	// rows is the store of the incidents; owner names the dispatcher in
	// their refresh leases.
	rows  *outbox.Incidents
	owner string

	mu    sync.Mutex
	every time.Duration
	last  time.Time
}

// due reports whether a refresh is due now, and if so counts it as made.
func (i *incidentRefresh) due() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if time.Since(i.last) < i.every {
		return false
	}
	i.last = time.Now()
	return true
}

// refreshIncidents brings the messages of each incident that ended within
// the last hour and whose end is in Slack — its root and its closing
// reply — to its counts as they are now, each when its text changed since
// it was last shown, at most every incidentRefresh.every, until the counts
// are final (nothing of the backlog is pending). The root of an incident
// still open is brought up to date too once operations of it were moved to
// review after max_outage. An edit can be made again, so a failed one is
// only logged and made again at the next refresh.
func (rv *receiver) refreshIncidents(ctx context.Context) {
	// A pass out of time leaves the refresh, still due, to the next one:
	// running out of time is not a failure to report.
	if ctx.Err() != nil || !rv.incidents.due() {
		return
	}
	ids, err := rv.incidents.rows.IncidentsToRefresh(ctx)
	if err != nil {
		if ctx.Err() == nil {
			rv.logger.Warn("notify: incidents to bring up to date", "error", err)
		}
		return
	}
	for _, id := range ids {
		err := rv.refreshIncident(ctx, id)
		var rerr *notify.ReleaseError
		switch {
		case err == nil:
		case errors.As(err, &rerr) || errors.Is(err, errRateLimited):
			// The channel waits for a rate limit (logged when Slack asked
			// for it), or the dispatcher stops: the next refresh makes the
			// edit.
			rv.logger.Debug("notify: the incident's messages wait for their channel", "incident_id", id, "error", err)
		default:
			rv.logger.Warn("notify: the incident's messages were not brought up to date", "incident_id", id, "error", err)
		}
	}
}

// refreshIncident edits incident id's root and closing reply to its counts
// as they are now. It first takes the incident's lease
// ([outbox.Incidents.RefreshIncident]); a dispatcher that finds it held by
// another leaves the incident to it this time. No transaction or
// connection is held while Slack answers: the reads are statements of
// their own, and the edits are given up after incidentEditTime, well within
// the lease, so that an edit with older counts never lands after one with
// newer counts made under a later lease.
func (rv *receiver) refreshIncident(ctx context.Context, id int64) error {
	ref, ok, err := rv.incidents.rows.RefreshIncident(ctx, id, rv.incidents.owner, incidentLease)
	if err != nil || !ok {
		return err // !ok: another dispatcher holds it
	}
	var final bool
	defer func() {
		// Given back even when ctx has ended; if this fails, the lease
		// runs out by itself.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		held, err := rv.incidents.rows.EndRefresh(wctx, ref, final)
		switch {
		case err != nil:
			rv.logger.Warn("notify: the incident's lease was not given back; it runs out by itself", "incident_id", id, "error", err)
		case !held:
			rv.logger.Warn("notify: the incident's lease ran out before it was given back", "incident_id", id, "lease", incidentLease)
		}
	}()

	r, err := rv.outbox.RootOf(ctx, outbox.Notification{IncidentID: id})
	if err != nil {
		return err
	}
	reply, err := rv.outbox.IncidentReply(ctx, id)
	if err != nil {
		return err
	}
	in, err := notify.ReadIncident(ctx, rv.db, rv.tickets, id)
	if err != nil {
		return err
	}

	ectx, cancel := context.WithTimeout(ctx, incidentEditTime)
	defer cancel()
	var errs []error
	if m := message.IncidentMessage(in); r.Live && m.Text != ref.Shown.Root {
		err := rv.editIncident(ectx, id, r.Channel, r.TS, r.DedupeKey, m)
		switch {
		case err == nil:
			ref.Shown.Root = m.Text
		case slackCode(err) == "message_not_found":
			// A person deleted the root: it is not edited any more (nor
			// posted again), by any dispatcher.
			first, err := rv.outbox.MarkRemoved(ctx, outbox.Notification{IncidentID: id}, r.Channel, r.TS)
			if err != nil {
				errs = append(errs, err)
			} else if first {
				rv.logger.Info("notify: the incident's root message was removed from Slack; not edited", "incident_id", id, "channel", r.Channel, "ts", r.TS)
			}
			r.Live = false
		default:
			errs = append(errs, fmt.Errorf("root: %w", err))
		}
	}
	if m := message.IncidentClosedReply(in); reply.TS != "" && !ref.ReplyGone && m.Text != ref.Shown.Reply {
		// After a rate limit on the root, the channel's gate is closed:
		// the reply waits for the next refresh without a call.
		err := rv.editIncident(ectx, id, reply.Channel, reply.TS, reply.DedupeKey, m)
		switch {
		case err == nil:
			ref.Shown.Reply = m.Text
		case slackCode(err) == "message_not_found":
			// A person deleted the reply: there is nothing to edit, and it
			// is not posted again.
			rv.logger.Info("notify: the incident's closing reply was removed from Slack; not edited", "incident_id", id, "channel", reply.Channel, "ts", reply.TS)
			ref.ReplyGone = true
		default:
			errs = append(errs, fmt.Errorf("closing reply: %w", err))
		}
	}
	// Every message left shows the counts; once nothing of the backlog is
	// pending, they no longer change (or nothing is left to edit).
	// An incident still open changes again when it ends.
	final = len(errs) == 0 && !in.EndedAt.IsZero() && (in.Pending == 0 || (!r.Live && (reply.TS == "" || ref.ReplyGone)))
	return errors.Join(errs...)
}

// editIncident edits incident id's message at channel and ts, which
// carries dedupeKey, to m, in channel's pace. A rate limit closes the
// channel for Slack's Retry-After.
func (rv *receiver) editIncident(ctx context.Context, id int64, channel, ts, dedupeKey string, m message.Message) error {
	return rv.slack.rateLimited(channel, rv.slack.update(ctx, channel, ts, m.Text, m.Blocks, message.Metadata(dedupeKey, message.AboutIncident(id))))
}

// shownIncident records what held row n of an incident, just sent, left
// in Slack (shown), so that the next refresh, by any dispatcher, edits only
// what changed since: the root, when n posted it or edited it, and the
// closing reply, when n posted it (an adopted reply holds the counts of an
// earlier attempt). Not recorded, it costs an edit to the same text.
func (rv *receiver) shownIncident(ctx context.Context, n outbox.Notification, shown outbox.Shown) {
	if n.IncidentID == 0 || (shown == outbox.Shown{}) {
		return
	}
	if err := rv.incidents.rows.RecordShown(ctx, n.IncidentID, shown); err != nil {
		rv.logger.Warn("notify: what the incident's messages show was not recorded", "incident_id", n.IncidentID, "error", err)
	}
}
