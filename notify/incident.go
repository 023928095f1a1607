package notify

// Provider incidents in Slack: one message per outage, not one per
// operation. The incident's start (a provider going down for the cluster)
// posts its root message; its end edits the root and replies in its
// thread with what happened to the provider's operations since it began.
// Both are outbox rows, delivered under the same rules as ticket alerts.

import (
	"context"
	"errors"
	"fmt"
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

// refreshIncidents edits the root message of each incident that ended
// within the last hour and whose end is in Slack to its counts as they are
// now, when they changed since this dispatcher last showed them, at most
// every incidentRefresh. An edit can be made again, so a failed one is
// only logged.
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
	for _, id := range ids {
		if err := d.refreshIncident(ctx, id); err != nil {
			d.logger.Warn("notify: the incident's message was not brought up to date", "incident_id", id, "err", err)
		}
	}
}

func (d *Dispatcher) refreshIncident(ctx context.Context, id int64) error {
	r, err := d.outbox.rootOf(ctx, Notification{IncidentID: id})
	if err != nil || !r.Live {
		return err
	}
	in, err := ReadIncident(ctx, d.db, d.tickets, id)
	if err != nil {
		return err
	}
	m := IncidentMessage(in)
	d.incidentMu.Lock()
	same := d.incidentShown[id] == m.Text
	d.incidentMu.Unlock()
	if same {
		return nil
	}
	if err := d.pace(ctx, r.Channel); err != nil {
		return err
	}
	_, _, _, err = d.client.UpdateMessageContext(ctx, r.Channel, r.TS,
		slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...),
		slack.MsgOptionMetadata(dedupeMetadata(r.DedupeKey, Notification{IncidentID: id})))
	if err != nil {
		return err
	}
	d.metrics.SlackPosted(metrics.SlackUpdate)
	d.incidentMu.Lock()
	d.incidentShown[id] = m.Text
	d.incidentMu.Unlock()
	return nil
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
	// them since; Pending how many are still pending now.
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
			(SELECT count(*) FROM ledger.operations o WHERE o.provider = i.provider AND o.status = 'pending')
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
// dispatcher keeps editing the root to the counts as the backlog settles. A closed row posted as a new
// root (the opening never reached Slack, or was removed) is the ended
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
// provider is back.
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
