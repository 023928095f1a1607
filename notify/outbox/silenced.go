package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The silences themselves — their table, matchers and rules — are package
// notify/silence's. What a silence does to the outbox is here: a held row
// recorded silenced ([StateSilenced], [Store.MarkSilenced]), what each
// silence held ([Store.HeldBySilences], [Store.SilencedTickets]), and the
// first alert of a ticket a silence held from its opening
// ([Store.ReleaseAsFirstAlert]).

// StateSilenced: the message was never posted because an active silence
// matched its ticket (or incident) when the row was claimed; SilenceID
// names it. Final.
const StateSilenced = "silenced"

// MarkSilenced records held row n silenced by silence id, with its
// lease released: the row is final and never delivered. The caller holds
// silence id (a share lock in the same transaction) so that its release
// sees the row. [ErrLeaseLost] when the lease has passed.
func (s *Store) MarkSilenced(ctx context.Context, n Notification, id int64) error {
	return s.update(ctx, n, "silence", `state = 'silenced', silence_id = $4::bigint, leased_by = NULL, lease_until = now(),
		history = `+historyEntry("'silenced'", "'held by silence ' || $4::bigint")+``, id)
}

// Held is what one silence held: the outbox rows it silenced, and their
// tickets and provider incidents.
type Held struct {
	Rows, Tickets, Incidents int64
}

// HeldBySilences returns what each of silences ids held; a silence that
// held nothing is missing from the map.
func (s *Store) HeldBySilences(ctx context.Context, ids []int64) (map[int64]Held, error) {
	rows, err := s.db.Query(ctx, `SELECT silence_id, count(*), count(DISTINCT ticket_id), count(DISTINCT incident_id)
		FROM sweeper.outbox WHERE silence_id = ANY($1) GROUP BY silence_id`, ids)
	if err != nil {
		return nil, fmt.Errorf("count what the silences held: %w", err)
	}
	out := map[int64]Held{}
	var id int64
	var h Held
	_, err = pgx.ForEachRow(rows, []any{&id, &h.Rows, &h.Tickets, &h.Incidents}, func() error {
		out[id] = h
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count what the silences held: %w", err)
	}
	return out, nil
}

// SilencedTickets returns the tickets whose rows silence id held, in
// order.
func (s *Store) SilencedTickets(ctx context.Context, id int64) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT DISTINCT ticket_id FROM sweeper.outbox WHERE silence_id = $1 AND ticket_id IS NOT NULL ORDER BY 1`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// ReleaseAsFirstAlert makes the pending Slack rows of kind of keys (the
// events a silence's release wrote) of kind [KindOpened] when their ticket
// has nothing in Slack — every other Slack row of it silenced, as when it
// was opened during the silence: its current alert is then its first, and
// takes the first alert's path (slack.group_wait, alert groups,
// group_detail_limit) rather than a root message of its own each.
func (s *Store) ReleaseAsFirstAlert(ctx context.Context, keys []string, kind string) error {
	_, err := s.db.Exec(ctx, `UPDATE sweeper.outbox o SET kind = $2
		WHERE o.dedupe_key = ANY($1) AND o.receiver = 'slack' AND o.state = 'pending' AND o.kind = $3
		  AND NOT EXISTS (SELECT 1 FROM sweeper.outbox e WHERE e.ticket_id = o.ticket_id AND e.receiver = 'slack'
		                  AND e.id <> o.id AND e.state <> 'silenced')`,
		keys, KindOpened, kind)
	return err
}

// Released is one silence released: its id and the tickets given their
// current alert.
type Released struct {
	SilenceID int64
	Tickets   []int64
}
