package outbox

// Provider incidents: one message per outage, not one per operation. The
// incident's start and end are outbox rows, written by the trigger on
// sweeper.provider_health; for an hour after the end, a dispatcher edits
// the incident's messages as the provider's backlog settles, under the
// incident's own lease (refresh_owner, refresh_until), recording what they
// show (shown_root, shown_reply) so that an edit is made only when the
// text changes.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Incidents reads and writes sweeper.incidents, a provider's outages and
// the state of their messages' refresh.
type Incidents struct {
	db DBTX
}

// NewIncidents returns an Incidents over db: a pool, or a transaction.
func NewIncidents(db DBTX) *Incidents { return &Incidents{db: db} }

// IncidentRow is a provider's outage as its row in sweeper.incidents holds
// it; message.Incident is the same outage as its messages show it, with
// the backlog's counts.
type IncidentRow struct {
	ID        int64
	Provider  string
	StartedAt time.Time
	// EndedAt is zero while the provider is down.
	EndedAt time.Time
	// Waiting is how many of the provider's operations were pending when
	// it went down.
	Waiting int
	// MovedToReview is how many of its waiting operations were moved to
	// review, as lookup_failed tickets, because the provider was down for
	// longer than MovedAfter (its max_outage).
	MovedToReview int
	MovedAfter    time.Duration
}

// Incident returns incident id.
func (s *Incidents) Incident(ctx context.Context, id int64) (IncidentRow, error) {
	in := IncidentRow{ID: id}
	var ended *time.Time
	var movedAfter float64
	err := s.db.QueryRow(ctx, `SELECT provider, started_at, ended_at, waiting,
			moved_to_review, coalesce(extract(epoch FROM moved_after), 0)::float8
		FROM sweeper.incidents WHERE id = $1`, id).
		Scan(&in.Provider, &in.StartedAt, &ended, &in.Waiting, &in.MovedToReview, &movedAfter)
	if errors.Is(err, pgx.ErrNoRows) {
		return IncidentRow{}, fmt.Errorf("incident %d not found", id)
	}
	if err != nil {
		return IncidentRow{}, fmt.Errorf("read incident %d: %w", id, err)
	}
	if ended != nil {
		in.EndedAt = *ended
	}
	in.MovedAfter = time.Duration(movedAfter * float64(time.Second)).Round(time.Second)
	return in, nil
}

// IncidentProvider is what picks incident id's channel: its provider.
func (s *Incidents) IncidentProvider(ctx context.Context, id int64) (string, error) {
	var provider string
	err := s.db.QueryRow(ctx, `SELECT provider FROM sweeper.incidents WHERE id = $1`, id).Scan(&provider)
	if err != nil {
		return "", fmt.Errorf("read incident %d: %w", id, err)
	}
	return provider, nil
}

// IncidentsToRefresh returns, oldest first, the incidents whose messages
// are to be brought up to date and whose refresh no dispatcher holds: those
// that ended within the last hour and whose end is in Slack, and those
// still open whose start is in Slack once operations of theirs were moved
// to review after max_outage (their root no longer says "nothing
// decided"); never one whose counts were final at its last refresh. It
// reads sweeper.outbox beside the incidents, and writes neither.
func (s *Incidents) IncidentsToRefresh(ctx context.Context) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT i.id FROM sweeper.incidents i
		WHERE i.refresh_final_at IS NULL
		  AND (i.refresh_until IS NULL OR i.refresh_until < now())
		  AND ((i.ended_at > now() - interval '1 hour'
		        AND EXISTS (SELECT 1 FROM sweeper.outbox c WHERE c.incident_id = i.id AND c.kind = $1 AND c.state = 'sent'))
		    OR (i.ended_at IS NULL AND i.moved_to_review > 0
		        AND EXISTS (SELECT 1 FROM sweeper.outbox c WHERE c.incident_id = i.id AND c.kind = $2 AND c.state = 'sent')))
		ORDER BY i.id`, KindIncidentClosed, KindIncidentOpened)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Shown is what an incident's messages were last posted or edited with:
// the text of its root and of its closing reply ("" when not known).
type Shown struct {
	Root, Reply string
}

// IncidentRefresh is a dispatcher's hold on incident ID's refresh, taken
// by [Incidents.RefreshIncident] and given back by [Incidents.EndRefresh].
type IncidentRefresh struct {
	ID int64
	// By is the dispatcher holding it, Until when its lease ends.
	By    string
	Until time.Time
	// Shown is what the incident's messages showed when it was taken;
	// ReplyGone that its closing reply was found removed from Slack.
	Shown     Shown
	ReplyGone bool
}

// RefreshIncident takes incident id's refresh for by, for lease, unless
// another dispatcher holds it: then ok is false.
func (s *Incidents) RefreshIncident(ctx context.Context, id int64, by string, lease time.Duration) (r IncidentRefresh, ok bool, err error) {
	r = IncidentRefresh{ID: id, By: by}
	err = s.db.QueryRow(ctx, `UPDATE sweeper.incidents SET refresh_owner = $2, refresh_until = now() + $3 * interval '1 second'
		WHERE id = $1 AND (refresh_until IS NULL OR refresh_until < now())
		RETURNING coalesce(shown_root, ''), coalesce(shown_reply, ''), reply_removed_at IS NOT NULL, refresh_until`,
		id, by, lease.Seconds()).Scan(&r.Shown.Root, &r.Shown.Reply, &r.ReplyGone, &r.Until)
	if errors.Is(err, pgx.ErrNoRows) {
		return IncidentRefresh{}, false, nil
	}
	if err != nil {
		return IncidentRefresh{}, false, fmt.Errorf("take the incident's lease: %w", err)
	}
	return r, true, nil
}

// EndRefresh gives back refresh r, recording what the incident's messages
// show now (r.Shown), whether its closing reply is gone (r.ReplyGone), and
// whether its counts are final: then it is not refreshed again. It reports
// false when r's lease had run out, and another may hold the refresh: then
// nothing is written.
func (s *Incidents) EndRefresh(ctx context.Context, r IncidentRefresh, final bool) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.incidents SET refresh_owner = NULL, refresh_until = NULL,
			shown_root = nullif($4, ''), shown_reply = nullif($5, ''),
			reply_removed_at = CASE WHEN $6 THEN coalesce(reply_removed_at, now()) END,
			refresh_final_at = CASE WHEN $7 THEN now() END
		WHERE id = $1 AND refresh_owner = $2 AND refresh_until = $3`,
		r.ID, r.By, r.Until, r.Shown.Root, r.Shown.Reply, r.ReplyGone, final)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

// RecordShown records what incident id's messages show after a row of it
// was sent: the root and the closing reply, each when not "".
func (s *Incidents) RecordShown(ctx context.Context, id int64, shown Shown) error {
	_, err := s.db.Exec(ctx, `UPDATE sweeper.incidents
		SET shown_root = coalesce(nullif($2, ''), shown_root), shown_reply = coalesce(nullif($3, ''), shown_reply)
		WHERE id = $1`, id, shown.Root, shown.Reply)
	return err
}

// CountMovedToReview adds n to the operations moved to review after
// maxOutage during provider's open incident, in the store's transaction
// (the one that moved them), so that the incident's messages say so at their next
// refresh. A provider with no open incident changes nothing.
func (s *Incidents) CountMovedToReview(ctx context.Context, provider string, n int, maxOutage time.Duration) error {
	if n <= 0 {
		return nil
	}
	if _, err := s.db.Exec(ctx, `UPDATE sweeper.incidents
		SET moved_to_review = moved_to_review + $2, moved_after = $3::interval, refresh_final_at = NULL
		WHERE provider = $1 AND ended_at IS NULL`, provider, n, maxOutage); err != nil {
		return fmt.Errorf("count the operations of %s moved to review on its incident: %w", provider, err)
	}
	return nil
}
