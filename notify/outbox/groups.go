package outbox

// Alert groups: the tickets opened for the same provider and reason, bound
// for the same channel, whose alerts go in the thread of one group message
// (sweeper.alert_groups, and the group's own outbox row). The decision of
// which group an alert joins, or whether it makes one, is the dispatcher's;
// these are its reads and writes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Groups reads and writes sweeper.alert_groups and
// sweeper.alert_group_owner_messages: the groups' details, edits and
// their owners' own messages. The decision of which group a row joins
// ([Store.DecideGroup]) stays on the outbox's [Store], which writes the
// rows that join.
type Groups struct {
	db DBTX
}

// NewGroups returns a Groups over db: a pool, or a transaction.
func NewGroups(db DBTX) *Groups { return &Groups{db: db} }

// GroupDecision is one decision on the alert groups of a channel, provider
// and reason: a transaction holding the lock that makes such decisions one
// at a time across every dispatcher, so that two never make two groups of
// the same tickets. End it with [GroupDecision.Commit] or
// [GroupDecision.Rollback].
type GroupDecision struct {
	tx                        pgx.Tx
	receiver                  string
	channel, provider, reason string
}

// DecideGroup begins a decision on the alert groups of channel (the
// destination of the store's receiver), provider and reason, over the
// receiver's rows; the store's database must be a pool, which begins
// transactions. It stays on the outbox's Store, whose receiver's rows it
// decides over and joins ([GroupDecision.Join]), though a new group is
// written to sweeper.alert_groups in its transaction.
func (s *Store) DecideGroup(ctx context.Context, channel, provider, reason string) (*GroupDecision, error) {
	db, ok := s.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return nil, errors.New("grouping alerts needs a database that begins transactions: give the dispatcher a pool")
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sweeper.alert_group'), hashtext($1 || ' ' || $2 || ' ' || $3))`,
		channel, provider, reason); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return &GroupDecision{tx: tx, receiver: s.Receiver(), channel: channel, provider: provider, reason: reason}, nil
}

// Commit ends the decision, keeping what it wrote.
func (g *GroupDecision) Commit(ctx context.Context) error { return g.tx.Commit(ctx) }

// Rollback ends the decision, undoing what it wrote; after Commit, it does
// nothing.
func (g *GroupDecision) Rollback(ctx context.Context) { _ = g.tx.Rollback(ctx) }

// OpenGroup returns the newest alert group of the decision's channel,
// provider and reason whose own message is pending or in Slack (not
// removed) and that holds the alert — pending, sent or folded into it — of
// one of open, the tickets open now of its provider and reason; or 0. One
// statement, driven by open: its cost follows the open tickets, not the
// groups and tickets of the past.
func (g *GroupDecision) OpenGroup(ctx context.Context, open []int64) (int64, error) {
	if len(open) == 0 {
		return 0, nil
	}
	var group int64
	err := g.tx.QueryRow(ctx, `SELECT g.id FROM sweeper.alert_groups g
		WHERE g.channel = $1 AND g.provider = $2 AND g.reason = $3
		  AND g.id IN (SELECT m.group_id FROM sweeper.outbox m
		               WHERE m.ticket_id = ANY($4) AND m.kind = 'opened' AND m.group_id IS NOT NULL
		                 AND m.state IN ('pending', 'sent', 'folded') AND m.receiver = $5)
		  AND EXISTS (SELECT 1 FROM sweeper.outbox r WHERE r.group_id = g.id AND r.ticket_id IS NULL
		              AND r.state IN ('pending', 'sent') AND r.removed_at IS NULL)
		ORDER BY g.id DESC LIMIT 1`, g.channel, g.provider, g.reason, open, g.receiver).Scan(&group)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("find the open alert group: %w", err)
	}
	return group, nil
}

// Ungrouped returns the rows due that may still join a group — "opened"
// rows of tickets among, pending, in no group, never attempted with an
// unknown result — and their tickets, oldest first.
func (g *GroupDecision) Ungrouped(ctx context.Context, among []int64) (rowIDs, ticketIDs []int64, err error) {
	if len(among) == 0 {
		return nil, nil, nil
	}
	rows, err := g.tx.Query(ctx, `SELECT o.id, o.ticket_id FROM sweeper.outbox o
		WHERE o.ticket_id = ANY($1) AND o.kind = 'opened' AND o.state = 'pending' AND o.group_id IS NULL AND o.reference IS NULL
		  AND o.receiver = $2 AND NOT o.uncertain AND o.search_windows = '[]'
		ORDER BY o.id`, among, g.receiver)
	if err != nil {
		return nil, nil, fmt.Errorf("find the alerts to group: %w", err)
	}
	var rowID, ticketID int64
	if _, err := pgx.ForEachRow(rows, []any{&rowID, &ticketID}, func() error {
		rowIDs, ticketIDs = append(rowIDs, rowID), append(ticketIDs, ticketID)
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("find the alerts to group: %w", err)
	}
	return rowIDs, ticketIDs, nil
}

// NewGroup makes a group of the decision's channel, provider and reason,
// with its message's outbox row, and makes rows — held row n among them —
// its alerts: those still pending and in no group that n's holder holds or
// nobody does. Rows held by other dispatchers join when their holder
// decides (under the same lock, it finds the group). It returns the
// group's id, or [ErrLeaseLost] when not even n's row is held any more.
func (g *GroupDecision) NewGroup(ctx context.Context, n Notification, rows []int64) (int64, error) {
	var group int64
	if err := g.tx.QueryRow(ctx, `INSERT INTO sweeper.alert_groups (channel, provider, reason) VALUES ($1, $2, $3) RETURNING id`,
		g.channel, g.provider, g.reason).Scan(&group); err != nil {
		return 0, fmt.Errorf("make an alert group: %w", err)
	}
	if _, err := g.tx.Exec(ctx, `INSERT INTO sweeper.outbox (group_id, dedupe_key, kind, receiver) VALUES ($1::bigint, 'group:' || $1::bigint::text || ':opened', $2, $3)`,
		group, KindGroupOpened, g.receiver); err != nil {
		return 0, fmt.Errorf("alert group %d: %w", group, err)
	}
	tag, err := g.tx.Exec(ctx, `UPDATE sweeper.outbox SET group_id = $1
		WHERE id = ANY($2) AND state = 'pending' AND group_id IS NULL
		  AND ((id = $3 AND leased_by = $4 AND attempts = $5) OR leased_by IS NULL OR lease_until <= now() OR leased_by = $4)`,
		group, rows, n.ID, n.LeasedBy, n.Attempts)
	if err != nil {
		return 0, fmt.Errorf("alert group %d: %w", group, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, ErrLeaseLost
	}
	return group, nil
}

// Join makes held row n an alert of group. [ErrLeaseLost] when the lease
// has passed.
func (g *GroupDecision) Join(ctx context.Context, n Notification, group int64) error {
	return NewStore(g.tx).update(ctx, n, "join an alert group", `group_id = $4`, group)
}

// GroupChannel is where alert group id's message goes: the channel its
// tickets were bound for when it was made.
func (s *Groups) GroupChannel(ctx context.Context, id int64) (string, error) {
	var channel string
	if err := s.db.QueryRow(ctx, `SELECT channel FROM sweeper.alert_groups WHERE id = $1`, id).Scan(&channel); err != nil {
		return "", fmt.Errorf("alert group %d: %w", id, err)
	}
	return channel, nil
}

// GroupMessagePending says whether alert group id's own message is still
// to be posted (its row pending and never sent).
func (s *Store) GroupMessagePending(ctx context.Context, id int64) (bool, error) {
	var pending bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sweeper.outbox
		WHERE group_id = $1 AND ticket_id IS NULL AND state = 'pending' AND reference IS NULL)`, id).Scan(&pending)
	if err != nil {
		return false, fmt.Errorf("alert group %d's message: %w", id, err)
	}
	return pending, nil
}

// TicketGroup returns the alert group whose thread holds ticket id's
// alert, or 0.
func (s *Store) TicketGroup(ctx context.Context, id int64) (int64, error) {
	var group int64
	err := s.db.QueryRow(ctx, `SELECT coalesce(max(group_id), 0) FROM sweeper.outbox WHERE ticket_id = $1 AND receiver = $2`, id, s.Receiver()).Scan(&group)
	return group, err
}

// Group is an alert group as the outbox records it.
type Group struct {
	ID       int64
	Provider string
	Reason   string
	// Tickets are the tickets whose alerts it holds, in the order they
	// joined: those with their own alert in its thread, and those folded
	// into its counts.
	Tickets []int64
	// Folded are those of Tickets whose first alert was folded into the
	// group's counts rather than posted in its thread.
	Folded []int64
	// Detailed counts the tickets given their own alert in its thread
	// ([Groups.TakeDetail]).
	Detailed int
}

// ErrGroupNotFound: no alert group has the given id.
var ErrGroupNotFound = errors.New("alert group not found")

// Group returns alert group id, or [ErrGroupNotFound]. Its tickets are
// read from the outbox rows that joined it.
func (s *Groups) Group(ctx context.Context, id int64) (Group, error) {
	g := Group{ID: id}
	err := s.db.QueryRow(ctx, `SELECT provider, reason,
			coalesce((SELECT array_agg(m.ticket_id ORDER BY m.id) FROM sweeper.outbox m
			          WHERE m.group_id = g.id AND m.ticket_id IS NOT NULL AND m.kind = 'opened'), '{}'),
			coalesce((SELECT array_agg(m.ticket_id ORDER BY m.id) FROM sweeper.outbox m
			          WHERE m.group_id = g.id AND m.ticket_id IS NOT NULL AND m.kind = 'opened' AND m.state = 'folded'), '{}'),
			cardinality(detailed)
		FROM sweeper.alert_groups g WHERE id = $1`, id).Scan(&g.Provider, &g.Reason, &g.Tickets, &g.Folded, &g.Detailed)
	if errors.Is(err, pgx.ErrNoRows) {
		return Group{}, fmt.Errorf("%w: %d", ErrGroupNotFound, id)
	}
	if err != nil {
		return Group{}, fmt.Errorf("read alert group %d: %w", id, err)
	}
	return g, nil
}

// TakeDetail reports whether ticket may have its own alert in alert group
// id's thread: it may when it was given one already, or when the group
// has given fewer than limit tickets theirs — it now has. One statement,
// so two dispatchers never give the group's last place twice.
func (s *Groups) TakeDetail(ctx context.Context, id, ticket int64, limit int) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.alert_groups
		SET detailed = CASE WHEN $2 = ANY(detailed) THEN detailed ELSE array_append(detailed, $2::bigint) END
		WHERE id = $1 AND ($2 = ANY(detailed) OR cardinality(detailed) < $3)`, id, ticket, limit)
	if err != nil {
		return false, fmt.Errorf("alert group %d: give ticket %d its own alert: %w", id, ticket, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Fold records held row n folded into alert group: never posted, counted
// by the group's message instead, with code ([CodeOverDetailLimit],
// [CodeFoldedTicket]) and why (cause). [ErrLeaseLost] when the lease has
// passed.
func (s *Store) Fold(ctx context.Context, n Notification, group int64, code string, cause error) error {
	return s.update(ctx, n, "fold", `state = 'folded', group_id = $6, error_code = $5, leased_by = NULL, lease_until = now(),
		history = `+historyEntry("'folded'", "$4"), errorText(cause), code, group)
}

// FoldedInto returns the alert group into which ticket id's first alert
// was folded, or 0 when it was not.
func (s *Store) FoldedInto(ctx context.Context, id int64) (int64, error) {
	var group int64
	err := s.db.QueryRow(ctx, `SELECT coalesce(max(group_id), 0) FROM sweeper.outbox
		WHERE ticket_id = $1 AND kind = 'opened' AND state = 'folded' AND receiver = $2`, id, s.Receiver()).Scan(&group)
	if err != nil {
		return 0, fmt.Errorf("ticket %d's alert group: %w", id, err)
	}
	return group, nil
}

// eventOwnMessage is the history event of a row granted a message of its
// own by [Groups.TakeOwnerMessage].
const eventOwnMessage = "own_message"

// OwnMessage reports whether held row n was granted a message of its own
// ([Groups.TakeOwnerMessage]) by an earlier attempt.
func (n Notification) OwnMessage() bool {
	var history []struct {
		Event string `json:"event"`
	}
	_ = json.Unmarshal(n.History, &history)
	for _, h := range history {
		if h.Event == eventOwnMessage {
			return true
		}
	}
	return false
}

// TakeOwnerMessage reports whether held row n, a folded ticket's event
// that owner must hear of, may have a message of its own: owner has had
// fewer than limit such messages about alert group's tickets in the
// current window of length every (a new window starts when the last one is
// over). When it may, the message is counted and the grant recorded in
// n's history, in one statement, so that a retry of n does not count it
// again ([Notification.OwnMessage]). [ErrLeaseLost] when the lease has
// passed. The statement writes sweeper.alert_group_owner_messages, whose
// store this is, and marks the grant on n's outbox row under n's lease.
func (s *Groups) TakeOwnerMessage(ctx context.Context, n Notification, group int64, owner string, limit int, every time.Duration) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	var granted, marked int
	err := s.db.QueryRow(ctx, `WITH granted AS (
			INSERT INTO sweeper.alert_group_owner_messages AS m (group_id, owner, window_start, messages)
			VALUES ($4, $5, now(), 1)
			ON CONFLICT (group_id, owner) DO UPDATE SET
				window_start = CASE WHEN m.window_start <= now() - make_interval(secs => $7) THEN now() ELSE m.window_start END,
				messages = CASE WHEN m.window_start <= now() - make_interval(secs => $7) THEN 1 ELSE m.messages + 1 END
			WHERE m.window_start <= now() - make_interval(secs => $7) OR m.messages < $6
			RETURNING 1),
		marked AS (
			UPDATE sweeper.outbox SET history = `+historyEntry("'"+eventOwnMessage+"'", "'for ' || $5")+`
			`+leaseHeld+` AND EXISTS (SELECT 1 FROM granted)
			RETURNING 1)
		SELECT (SELECT count(*) FROM granted), (SELECT count(*) FROM marked)`,
		n.ID, n.LeasedBy, n.Attempts, group, owner, limit, every.Seconds()).Scan(&granted, &marked)
	if err != nil {
		return false, fmt.Errorf("outbox row %d: count its message for %s: %w", n.ID, owner, err)
	}
	if granted > 0 && marked == 0 {
		return false, fmt.Errorf("%w: row %d (%s), own message", ErrLeaseLost, n.ID, n.DedupeKey)
	}
	return granted > 0, nil
}

// GroupEdit is an edit of an alert group's message taken by
// [Groups.TakeGroupEdit]: when it was taken, and the last edit before it.
type GroupEdit struct {
	Group int64
	At    time.Time
	Prev  *time.Time
}

// TakeGroupEdit takes the edit of alert group id's message when nobody
// edited it within the last every (or ever): the edit is recorded as made
// now, in one statement, so that two dispatchers never edit one group's
// message twice in one interval. ok is false when it is not due.
func (s *Groups) TakeGroupEdit(ctx context.Context, id int64, every time.Duration) (edit GroupEdit, ok bool, err error) {
	edit.Group = id
	err = s.db.QueryRow(ctx, `UPDATE sweeper.alert_groups g SET edited_at = clock_timestamp()
		FROM (SELECT edited_at FROM sweeper.alert_groups WHERE id = $1 FOR UPDATE) AS before
		WHERE g.id = $1 AND (g.edited_at IS NULL OR g.edited_at <= now() - make_interval(secs => $2))
		RETURNING g.edited_at, before.edited_at`, id, every.Seconds()).Scan(&edit.At, &edit.Prev)
	if errors.Is(err, pgx.ErrNoRows) {
		return edit, false, nil
	}
	if err != nil {
		return edit, false, fmt.Errorf("alert group %d: take its edit: %w", id, err)
	}
	return edit, true, nil
}

// GiveBackGroupEdit undoes edit, which made no call (Slack's rate limit
// refused it, or its channel waits for one): the message may be edited
// again at once, unless another edit was taken since.
func (s *Groups) GiveBackGroupEdit(ctx context.Context, edit GroupEdit) error {
	_, err := s.db.Exec(ctx, `UPDATE sweeper.alert_groups SET edited_at = $3 WHERE id = $1 AND edited_at = $2`,
		edit.Group, edit.At, edit.Prev)
	if err != nil {
		return fmt.Errorf("alert group %d: give back its edit: %w", edit.Group, err)
	}
	return nil
}
