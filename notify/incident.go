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
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

// incidentRefresh is how often, by default, a dispatcher brings the
// messages of an incident that ended within the last hour up to date,
// while its counts change: the provider's backlog settles after it is back
// (DispatcherConfig.IncidentRefresh).
const incidentRefresh = 30 * time.Second

// refreshIncidents brings the messages of each incident that ended within
// the last hour and whose end is in Slack — its root and its closing
// reply — to its counts as they are now, each when its text changed since
// this dispatcher last showed it, at most every incidentEvery. An edit
// can be made again, so a failed one is only logged and made again at the
// next refresh.
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
	rows, err := d.db.Query(ctx, `SELECT i.id FROM sweeper.incidents i
		WHERE i.ended_at > now() - interval '1 hour'
		  AND EXISTS (SELECT 1 FROM sweeper.outbox c WHERE c.incident_id = i.id AND c.kind = $1 AND c.state = 'sent')
		ORDER BY i.id`, KindIncidentClosed)
	if err != nil {
		d.logger.Warn("notify: incidents to bring up to date", "err", err)
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		d.logger.Warn("notify: incidents to bring up to date", "err", err)
		return
	}
	// What was shown of incidents past the hour is not needed any more.
	d.incidentMu.Lock()
	maps.DeleteFunc(d.incidentShown, func(id int64, _ incidentShown) bool { return !slices.Contains(ids, id) })
	d.incidentMu.Unlock()
	for _, id := range ids {
		if err := d.refreshIncident(ctx, id); err != nil {
			d.logger.Warn("notify: the incident's messages were not brought up to date", "incident_id", id, "err", err)
		}
	}
}

// incidentShown is what a dispatcher last showed of an incident in Slack:
// the text of its root and of its closing reply ("" when not known).
type incidentShown struct {
	root, reply string
}

// refreshIncident edits incident id's root and closing reply to its counts
// as they are now. The counts are read and the edits made under a lock of
// the incident, across every dispatcher, so that an edit with older counts
// never lands after one with newer counts; a dispatcher that finds the
// lock taken leaves the incident to its holder this time.
func (d *Dispatcher) refreshIncident(ctx context.Context, id int64) error {
	db, ok := d.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return errors.New("bringing incidents up to date needs a database that begins transactions: give the dispatcher a pool")
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtext('sweeper.incident'), hashtext($1::bigint::text))`, id).Scan(&mine); err != nil {
		return err
	}
	if !mine {
		return nil
	}
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
	d.incidentMu.Lock()
	shown := d.incidentShown[id]
	d.incidentMu.Unlock()

	var errs []error
	if m := IncidentMessage(in); r.Live && m.Text != shown.root {
		if err := d.editIncident(ctx, id, r.Channel, r.TS, r.DedupeKey, m); err != nil {
			errs = append(errs, fmt.Errorf("root: %w", err))
		} else {
			shown.root = m.Text
		}
	}
	if m := IncidentClosedReply(in); reply.TS != "" && m.Text != shown.reply {
		err := d.editIncident(ctx, id, reply.Channel, reply.TS, reply.DedupeKey, m)
		if slackCode(err) == "message_not_found" {
			// A person deleted the reply: there is nothing to edit, and it
			// is not posted again.
			d.logger.Info("notify: the incident's closing reply was removed from Slack; not edited", "incident_id", id, "channel", reply.Channel, "ts", reply.TS)
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("closing reply: %w", err))
		} else {
			shown.reply = m.Text
		}
	}
	d.incidentMu.Lock()
	d.incidentShown[id] = shown
	d.incidentMu.Unlock()
	return errors.Join(errs...)
}

// editIncident edits incident id's message at channel and ts, which
// carries dedupeKey, to m.
func (d *Dispatcher) editIncident(ctx context.Context, id int64, channel, ts, dedupeKey string, m Message) error {
	if err := d.pace(ctx, channel); err != nil {
		return err
	}
	_, _, _, err := d.client.UpdateMessageContext(ctx, channel, ts,
		slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...),
		slack.MsgOptionMetadata(dedupeMetadata(dedupeKey, Notification{IncidentID: id})))
	if err != nil {
		return err
	}
	d.metrics.SlackPosted(metrics.SlackUpdate)
	return nil
}

// shownIncident records what held row n of an incident, just sent, left
// in Slack, so that the next refresh edits only what changed since: the
// root, when n posted it or edited it, and the closing reply, when n
// posted it (an adopted reply holds the counts of an earlier attempt).
func (d *Dispatcher) shownIncident(n Notification, res attemptResult) {
	if n.IncidentID == 0 || (res.shown == incidentShown{}) {
		return
	}
	d.incidentMu.Lock()
	defer d.incidentMu.Unlock()
	shown := d.incidentShown[n.IncidentID]
	if res.shown.root != "" {
		shown.root = res.shown.root
	}
	if res.shown.reply != "" {
		shown.reply = res.shown.reply
	}
	d.incidentShown[n.IncidentID] = shown
}

// Incident is a provider's outage as sweeper.incidents records it, with
// what became of the provider's operations since it began.
type Incident struct {
	ID        int64
	Provider  string
	StartedAt time.Time
	// EndedAt is zero while the provider is down.
	EndedAt time.Time
	// Waiting is how many of the provider's operations were pending when
	// it went down.
	Waiting int
	// Settled is how many of its operations were settled (done or failed)
	// since it went down; Review how many review tickets were opened for
	// them since; Pending how many of those written before it ended (its
	// backlog) are still pending now: 0 once the backlog has settled,
	// whatever work came after.
	Settled, Review, Pending int
}

// ReadIncident returns incident id with its counts as of now: the
// incident and the operations from db, the tickets through tickets. The
// counts are a report, each read as it is committed when it is read.
func ReadIncident(ctx context.Context, db ledger.DB, tickets review.TicketReader, id int64) (Incident, error) {
	in := Incident{ID: id}
	var ended *time.Time
	err := db.QueryRow(ctx, `SELECT i.provider, i.started_at, i.ended_at, i.waiting,
			(SELECT count(*) FROM ledger.operations o WHERE o.provider = i.provider
			   AND o.status IN ('done', 'failed') AND o.updated_at >= i.started_at),
			(SELECT count(*) FROM ledger.operations o WHERE o.provider = i.provider AND o.status = 'pending'
			   AND o.created_at <= coalesce(i.ended_at, now()))
		FROM sweeper.incidents i WHERE i.id = $1`, id).
		Scan(&in.Provider, &in.StartedAt, &ended, &in.Waiting, &in.Settled, &in.Pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return Incident{}, fmt.Errorf("incident %d not found", id)
	}
	if err != nil {
		return Incident{}, fmt.Errorf("read incident %d: %w", id, err)
	}
	if ended != nil {
		in.EndedAt = *ended
	}
	if in.Review, err = tickets.OpenedSince(ctx, in.Provider, in.StartedAt); err != nil {
		return Incident{}, fmt.Errorf("read incident %d: %w", id, err)
	}
	return in, nil
}

// IncidentComposer turns an incident's outbox rows into Slack messages:
// KindIncidentOpened posts the root ([IncidentMessage] while down);
// KindIncidentClosed edits the root to the incident as it ended and replies
// with the counts ([IncidentClosedReply]). For an hour after the end, the
// dispatcher keeps editing the root and that reply to the counts as the
// backlog settles (DispatcherConfig.IncidentRefresh). A closed row posted
// as a new root (the opening never reached Slack, or was removed) is the ended
// incident's root message itself.
// It counts the provider's tickets through Tickets.
type IncidentComposer struct {
	Tickets review.TicketReader
}

var _ Composer = IncidentComposer{}

// Compose implements [Composer].
func (c IncidentComposer) Compose(ctx context.Context, db ledger.DB, n Notification) (Post, error) {
	if n.IncidentID == 0 {
		return Post{}, fmt.Errorf("outbox row %d belongs to no incident", n.ID)
	}
	if c.Tickets == nil {
		return Post{}, errors.New("the incident composer has no ticket reader: set IncidentComposer.Tickets")
	}
	in, err := ReadIncident(ctx, db, c.Tickets, n.IncidentID)
	if err != nil {
		return Post{}, err
	}
	root := IncidentMessage(in)
	if n.Kind == KindIncidentOpened || n.NewRoot != "" {
		return Post{Text: root.Text, Blocks: root.Blocks}, nil
	}
	reply := IncidentClosedReply(in)
	return Post{Text: reply.Text, Blocks: reply.Blocks, RootEdit: &RootEdit{Text: root.Text, Blocks: root.Blocks}}, nil
}

// IncidentMessage is an incident's root message: while the provider is
// down, since when and how many operations wait; once it is back, how long
// it was down and what became of them.
func IncidentMessage(in Incident) Message {
	provider := "*" + escape(oneLine(clip(in.Provider, 100))) + "*"
	var text string
	if in.EndedAt.IsZero() {
		text = fmt.Sprintf(":rotating_light: %s unreachable since %s — %s waiting, nothing decided; lookups resume automatically.",
			provider, slackDate(in.StartedAt), operations(in.Waiting))
	} else {
		text = fmt.Sprintf(":white_check_mark: %s was unreachable from %s for %s, back since %s: %s",
			provider, slackDate(in.StartedAt), roundDuration(in.EndedAt.Sub(in.StartedAt)), slackDate(in.EndedAt), countsText(in))
	}
	return Message{Text: text, Blocks: []slack.Block{
		mrkdwnSection(text),
		slack.NewContextBlock("", mrkdwn(fmt.Sprintf("sweeper · provider incident #%d · no alert is posted per operation while it lasts; "+
			"`sweeper providers` shows its health", in.ID))),
	}}
}

// IncidentClosedReply is the reply in an incident's thread when the
// provider is back, edited as its counts change.
func IncidentClosedReply(in Incident) Message {
	text := fmt.Sprintf("Back after %s: %s", roundDuration(in.EndedAt.Sub(in.StartedAt)), countsText(in))
	return Message{Text: text, Blocks: []slack.Block{mrkdwnSection(text)}}
}

// countsText is what became of the provider's operations since the
// incident began.
func countsText(in Incident) string {
	s := fmt.Sprintf("%s settled, %s need review", thousands(in.Settled), thousands(in.Review))
	if in.Pending > 0 {
		s += fmt.Sprintf(", %s still being looked up", thousands(in.Pending))
	}
	return s + "."
}

// operations says "1 operation" or "1,400 operations".
func operations(n int) string {
	if n == 1 {
		return "1 operation"
	}
	return thousands(n) + " operations"
}

// thousands writes n with comma separators: 1,400.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// roundDuration writes d to the second: 4m10s.
func roundDuration(d time.Duration) string {
	return max(d.Round(time.Second), 0).String()
}
