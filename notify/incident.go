package notify

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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/review"
)

// incidentRefresh is how often, by default, a dispatcher brings the
// messages of an incident that ended within the last hour up to date,
// while its counts change: the provider's backlog settles after it is back
// (DispatcherConfig.IncidentRefresh).
const incidentRefresh = 30 * time.Second

// incidentLease is how long a dispatcher holds an incident to bring its
// messages up to date; incidentEditTime is the most it spends on Slack in
// that time (the channel's pace and both edits), well below the lease: an
// edit not answered by then is given up long before another dispatcher
// may take the incident and edit it with newer counts.
const (
	incidentLease    = time.Minute
	incidentEditTime = 15 * time.Second
)

// refreshIncidents brings the messages of each incident that ended within
// the last hour and whose end is in Slack — its root and its closing
// reply — to its counts as they are now, each when its text changed since
// it was last shown, at most every incidentEvery, until the counts are
// final (nothing of the backlog is pending). The root of an incident still
// open is brought up to date too once operations of it were moved to
// review after max_outage. An edit can be made again,
// so a failed one is only logged and made again at the next refresh.
func (d *Dispatcher) refreshIncidents(ctx context.Context) {
	d.incidentMu.Lock()
	due := time.Since(d.incidentsAt) >= d.incidentEvery
	if due {
		d.incidentsAt = time.Now()
	}
	d.incidentMu.Unlock()
	if !due {
		return
	}
	// An incident still open is refreshed too once operations of it were
	// moved to review (max_outage): its root no longer says "nothing
	// decided".
	rows, err := d.db.Query(ctx, `SELECT i.id FROM sweeper.incidents i
		WHERE i.refresh_final_at IS NULL
		  AND (i.refresh_until IS NULL OR i.refresh_until < now())
		  AND ((i.ended_at > now() - interval '1 hour'
		        AND EXISTS (SELECT 1 FROM sweeper.outbox c WHERE c.incident_id = i.id AND c.kind = $1 AND c.state = 'sent'))
		    OR (i.ended_at IS NULL AND i.moved_to_review > 0
		        AND EXISTS (SELECT 1 FROM sweeper.outbox c WHERE c.incident_id = i.id AND c.kind = $2 AND c.state = 'sent')))
		ORDER BY i.id`, KindIncidentClosed, KindIncidentOpened)
	if err != nil {
		d.logger.Warn("notify: incidents to bring up to date", "error", err)
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		d.logger.Warn("notify: incidents to bring up to date", "error", err)
		return
	}
	for _, id := range ids {
		err := d.refreshIncident(ctx, id)
		var rerr *releaseError
		switch {
		case err == nil:
		case errors.As(err, &rerr) || errors.Is(err, errRateLimited):
			// The channel waits for a rate limit (logged when Slack asked
			// for it), or the dispatcher stops: the next refresh makes the
			// edit.
			d.logger.Debug("notify: the incident's messages wait for their channel", "incident_id", id, "error", err)
		default:
			d.logger.Warn("notify: the incident's messages were not brought up to date", "incident_id", id, "error", err)
		}
	}
}

// incidentShown is what an incident's messages were last posted or edited
// with: the text of its root and of its closing reply ("" when not known).
type incidentShown struct {
	root, reply string
}

// refreshIncident edits incident id's root and closing reply to its counts
// as they are now. It first takes the incident's lease (sweeper.incidents'
// refresh_owner and refresh_until); a dispatcher that finds it held by
// another leaves the incident to it this time. No transaction or
// connection is held while Slack answers: the reads are statements of
// their own, and the edits are given up after incidentEditTime, well within
// the lease, so that an edit with older counts never lands after one with
// newer counts made under a later lease.
func (d *Dispatcher) refreshIncident(ctx context.Context, id int64) error {
	var (
		shown     incidentShown
		replyGone bool
		until     time.Time
	)
	err := d.db.QueryRow(ctx, `UPDATE sweeper.incidents SET refresh_owner = $2, refresh_until = now() + $3 * interval '1 second'
		WHERE id = $1 AND (refresh_until IS NULL OR refresh_until < now())
		RETURNING coalesce(shown_root, ''), coalesce(shown_reply, ''), reply_removed_at IS NOT NULL, refresh_until`,
		id, d.id, incidentLease.Seconds()).Scan(&shown.root, &shown.reply, &replyGone, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // another dispatcher holds it
	}
	if err != nil {
		return fmt.Errorf("take the incident's lease: %w", err)
	}
	var final bool
	defer func() {
		// Given back even when ctx has ended; if this fails, the lease
		// runs out by itself.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		tag, err := d.db.Exec(wctx, `UPDATE sweeper.incidents SET refresh_owner = NULL, refresh_until = NULL,
				shown_root = nullif($4, ''), shown_reply = nullif($5, ''),
				reply_removed_at = CASE WHEN $6 THEN coalesce(reply_removed_at, now()) END,
				refresh_final_at = CASE WHEN $7 THEN now() END
			WHERE id = $1 AND refresh_owner = $2 AND refresh_until = $3`,
			id, d.id, until, shown.root, shown.reply, replyGone, final)
		switch {
		case err != nil:
			d.logger.Warn("notify: the incident's lease was not given back; it runs out by itself", "incident_id", id, "error", err)
		case tag.RowsAffected() == 0:
			d.logger.Warn("notify: the incident's lease ran out before it was given back", "incident_id", id, "lease", incidentLease)
		}
	}()

	r, err := d.outbox.rootOf(ctx, Notification{IncidentID: id})
	if err != nil {
		return err
	}
	reply, err := d.outbox.incidentReply(ctx, id)
	if err != nil {
		return err
	}
	in, err := ReadIncident(ctx, d.db, d.tickets, id)
	if err != nil {
		return err
	}

	ectx, cancel := context.WithTimeout(ctx, incidentEditTime)
	defer cancel()
	var errs []error
	if m := message.IncidentMessage(in); r.Live && m.Text != shown.root {
		err := d.editIncident(ectx, id, r.Channel, r.TS, r.DedupeKey, m)
		switch {
		case err == nil:
			shown.root = m.Text
		case slackCode(err) == "message_not_found":
			// A person deleted the root: it is not edited any more (nor
			// posted again), by any dispatcher.
			first, err := d.outbox.markRemoved(ctx, Notification{IncidentID: id}, r.Channel, r.TS)
			if err != nil {
				errs = append(errs, err)
			} else if first {
				d.logger.Info("notify: the incident's root message was removed from Slack; not edited", "incident_id", id, "channel", r.Channel, "ts", r.TS)
			}
			r.Live = false
		default:
			errs = append(errs, fmt.Errorf("root: %w", err))
		}
	}
	if m := message.IncidentClosedReply(in); reply.TS != "" && !replyGone && m.Text != shown.reply {
		// After a rate limit on the root, the channel's gate is closed:
		// the reply waits for the next refresh without a call.
		err := d.editIncident(ectx, id, reply.Channel, reply.TS, reply.DedupeKey, m)
		switch {
		case err == nil:
			shown.reply = m.Text
		case slackCode(err) == "message_not_found":
			// A person deleted the reply: there is nothing to edit, and it
			// is not posted again.
			d.logger.Info("notify: the incident's closing reply was removed from Slack; not edited", "incident_id", id, "channel", reply.Channel, "ts", reply.TS)
			replyGone = true
		default:
			errs = append(errs, fmt.Errorf("closing reply: %w", err))
		}
	}
	// Every message left shows the counts; once nothing of the backlog is
	// pending, they no longer change (or nothing is left to edit).
	// An incident still open changes again when it ends.
	final = len(errs) == 0 && !in.EndedAt.IsZero() && (in.Pending == 0 || (!r.Live && (reply.TS == "" || replyGone)))
	return errors.Join(errs...)
}

// editIncident edits incident id's message at channel and ts, which
// carries dedupeKey, to m, in channel's pace. A rate limit closes the
// channel for Slack's Retry-After.
func (d *Dispatcher) editIncident(ctx context.Context, id int64, channel, ts, dedupeKey string, m message.Message) error {
	if err := d.pace(ctx, channel); err != nil {
		return err
	}
	_, _, _, err := d.client.UpdateMessageContext(ctx, channel, ts,
		slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...),
		slack.MsgOptionMetadata(message.Metadata(dedupeKey, message.AboutIncident(id))))
	if d.rateLimited(channel, err) {
		return fmt.Errorf("%w: %w", errRateLimited, err)
	}
	if err != nil {
		return err
	}
	d.metrics.SlackPosted(metrics.SlackUpdate)
	return nil
}

// shownIncident records what held row n of an incident, just sent, left
// in Slack, so that the next refresh, by any dispatcher, edits only what
// changed since: the root, when n posted it or edited it, and the closing
// reply, when n posted it (an adopted reply holds the counts of an
// earlier attempt). Not recorded, it costs an edit to the same text.
func (d *Dispatcher) shownIncident(ctx context.Context, n Notification, res attemptResult) {
	if n.IncidentID == 0 || (res.shown == incidentShown{}) {
		return
	}
	if _, err := d.db.Exec(ctx, `UPDATE sweeper.incidents
		SET shown_root = coalesce(nullif($2, ''), shown_root), shown_reply = coalesce(nullif($3, ''), shown_reply)
		WHERE id = $1`, n.IncidentID, res.shown.root, res.shown.reply); err != nil {
		d.logger.Warn("notify: what the incident's messages show was not recorded", "incident_id", n.IncidentID, "error", err)
	}
}

// ReadIncident returns incident id with its counts as of now: the
// incident and the operations from db, the tickets through tickets. The
// counts are a report, each read as it is committed when it is read. The
// pending count reads the provider's pending operations
// (operations_pending_stale_idx); the settled count has no index of its
// own and reads the provider's operations — a refresh runs it at most
// every incident_refresh, on one dispatcher at a time, and no more once
// the counts are final.
func ReadIncident(ctx context.Context, db ledger.DB, tickets review.TicketReader, id int64) (message.Incident, error) {
	in := message.Incident{ID: id}
	var ended *time.Time
	var movedAfter float64
	err := db.QueryRow(ctx, `SELECT i.provider, i.started_at, i.ended_at, i.waiting,
			i.moved_to_review, coalesce(extract(epoch FROM i.moved_after), 0)::float8,
			(SELECT count(*) FROM ledger.operations o WHERE o.provider = i.provider
			   AND o.status IN ('done', 'failed') AND o.updated_at >= i.started_at
			   AND o.created_at <= coalesce(i.ended_at, now())),
			(SELECT count(*) FROM ledger.operations o WHERE o.provider = i.provider AND o.status = 'pending'
			   AND o.created_at <= coalesce(i.ended_at, now()))
		FROM sweeper.incidents i WHERE i.id = $1`, id).
		Scan(&in.Provider, &in.StartedAt, &ended, &in.Waiting, &in.MovedToReview, &movedAfter, &in.Settled, &in.Pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return message.Incident{}, fmt.Errorf("incident %d not found", id)
	}
	if err != nil {
		return message.Incident{}, fmt.Errorf("read incident %d: %w", id, err)
	}
	if ended != nil {
		in.EndedAt = *ended
	}
	in.MovedAfter = time.Duration(movedAfter * float64(time.Second)).Round(time.Second)
	if in.Review, err = tickets.OpenedSince(ctx, in.Provider, in.StartedAt, in.EndedAt); err != nil {
		return message.Incident{}, fmt.Errorf("read incident %d: %w", id, err)
	}
	return in, nil
}
