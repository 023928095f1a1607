package silence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// AnyActive reports whether some silence is active now: when none
// is, a dispatcher reads no ticket to match.
func (s *Store) AnyActive(ctx context.Context) (bool, error) {
	var any bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sweeper.silences
		WHERE starts_at <= now() AND ends_at > now() AND released_at IS NULL)`).Scan(&any)
	if err != nil {
		return false, fmt.Errorf("look for active silences: %w", err)
	}
	return any, nil
}

// Mute records held row n silenced when an active silence matches
// labels (its ticket's, or its incident's provider) now, and returns that
// silence's id, or 0 (the row is untouched). The silence is read with a
// share lock held until the row is recorded, in one transaction, so that
// its release ([Store.ReleaseEnded]), which waits for it, sees every row
// it held. A row an earlier attempt may have posted is never silenced.
// [outbox.ErrLeaseLost] when the lease has passed.
func (s *Store) Mute(ctx context.Context, n outbox.Notification, labels review.Labels) (int64, error) {
	if n.Reference != "" || n.Uncertain || len(n.SearchWindows) > 0 {
		return 0, nil
	}
	l, err := json.Marshal(labels)
	if err != nil {
		return 0, err
	}
	// Most rows no silence matches: one statement, no lock, says so.
	if id, err := holding(ctx, s.db, l, ""); err != nil || id == 0 {
		return 0, wrapRow(n, err)
	}
	db, ok := s.db.(beginner)
	if !ok {
		return 0, errors.New("silence a row: the silences' database cannot begin a transaction: give it a pool")
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, wrapRow(n, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	id, err := holding(ctx, tx, l, "FOR SHARE")
	if err != nil || id == 0 {
		return 0, wrapRow(n, err)
	}
	if err := outbox.NewStore(tx).MarkSilenced(ctx, n, id); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, wrapRow(n, err)
	}
	return id, nil
}

// holding returns the id of the active silence, the lowest, that matches
// labels l (JSON) now, or 0; lock is "" or a locking clause.
func holding(ctx context.Context, db ledger.DB, l []byte, lock string) (int64, error) {
	var id int64
	err := db.QueryRow(ctx, `SELECT coalesce((SELECT id FROM sweeper.silences
			WHERE starts_at <= now() AND ends_at > now() AND released_at IS NULL AND sweeper.silence_matches(matchers, $1)
			ORDER BY id LIMIT 1 `+lock+`), 0)`, l).Scan(&id)
	return id, err
}

// wrapRow is err, if any, said of held row n.
func wrapRow(n outbox.Notification, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("outbox row %d: silence: %w", n.ID, err)
}

// beginner is a database that begins transactions: a pool, or a
// transaction (a savepoint).
type beginner interface {
	Begin(context.Context) (pgx.Tx, error)
}

// ReleaseEnded releases every silence that has ended and is not released
// yet, each in a transaction of its own: it records the release (a
// compare-and-set: a silence is released once, whichever replica comes
// first, and one ended while every replica was down is released by the
// first to look), and writes on each ticket it held that is still open one
// [review.EventSilenceEnded] event, whose outbox row carries the ticket's
// current state. A ticket resolved meanwhile gets nothing. The event's
// Slack row is a reply in the thread of the ticket's root; for a ticket
// with nothing in Slack — every Slack row of it so far silenced, as when it
// was opened during the silence — it is of kind [outbox.KindOpened], the ticket's
// first alert: it waits slack.group_wait and joins an alert group as a
// fresh ticket's would, so that a silence over a large incident ends in
// one group, not one root message per ticket. Other receivers' rows keep
// the event's kind.
func (s *Store) ReleaseEnded(ctx context.Context) ([]outbox.Released, error) {
	db, ok := s.db.(beginner)
	if !ok {
		return nil, errors.New("release silences: the silences' database cannot begin a transaction: give it a pool")
	}
	rows, err := s.db.Query(ctx, `SELECT id FROM sweeper.silences WHERE released_at IS NULL AND ends_at <= now() ORDER BY id LIMIT 100`)
	if err != nil {
		return nil, fmt.Errorf("find ended silences: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("find ended silences: %w", err)
	}
	var out []outbox.Released
	for _, id := range ids {
		r, err := release(ctx, db, id)
		if err != nil {
			return out, err
		}
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// release releases silence id in one transaction, or returns nil when
// another did first.
func release(ctx context.Context, db beginner, id int64) (*outbox.Released, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The update waits for the dispatchers silencing rows under it (they
	// hold it shared), and its later statements see those rows.
	tag, err := tx.Exec(ctx, `UPDATE sweeper.silences SET released_at = now()
		WHERE id = $1 AND released_at IS NULL AND ends_at <= now()`, id)
	if err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return nil, nil
	}
	messages := outbox.NewStore(tx)
	held, err := messages.SilencedTickets(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	r := &outbox.Released{SilenceID: id}
	var keys []string
	if len(held) > 0 {
		summaries, err := review.NewTickets(tx).Summaries(ctx, held)
		if err != nil {
			return nil, fmt.Errorf("release silence %d: %w", id, err)
		}
		store := review.NewNotes(tx)
		for _, t := range summaries {
			if t.State != review.StateOpen {
				continue
			}
			if _, err := store.Note(ctx, t.ID, review.EventSilenceEnded, fmt.Sprint(id),
				map[string]int64{"silence_id": id}); err != nil {
				return nil, fmt.Errorf("release silence %d: %w", id, err)
			}
			r.Tickets = append(r.Tickets, t.ID)
			keys = append(keys, review.EventKey(t.ID, review.EventSilenceEnded, fmt.Sprint(id)))
		}
	}
	// A ticket whose every Slack row so far was silenced (opened during
	// the silence) has nothing in Slack: its current alert is its first.
	if err := messages.ReleaseAsFirstAlert(ctx, keys, review.EventSilenceEnded); err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	return r, nil
}
