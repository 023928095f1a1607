package notify

// The outbox: how sweeper tells people about review tickets in Slack and
// never tells them twice.
//
// Every ticket event has one row in the outbox (sweeper.outbox), written
// by a database trigger in the transaction that changed the ticket. A
// [Dispatcher] claims rows with a lease, posts each one's message and
// records its channel and ts. Because chat.postMessage has no idempotency
// key, an attempt whose result is unknown marks its row uncertain, and the
// next attempt first searches Slack for a message carrying the row's dedupe
// key in its metadata and adopts it when found. Errors a person must fix
// park the row, to be replayed afterwards.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// Outbox row states.
const (
	// OutboxPending: the message is owed; the row is claimable once its
	// lease_until has passed.
	OutboxPending = "pending"
	// OutboxSent: the message is in Slack, at Channel and TS. Final.
	OutboxSent = "sent"
	// OutboxParked: Slack refused the message for a reason a person must fix
	// (LastError); [Outbox.Replay] makes it pending again.
	OutboxParked = "parked"
)

// KindOpened is the event kind whose message is a ticket's root message;
// every other kind is a reply in that message's thread.
const KindOpened = "opened"

var (
	// ErrNotificationNotFound: no outbox row has the given id.
	ErrNotificationNotFound = errors.New("notify: outbox row not found")
	// ErrNotParked: only a parked row can be replayed.
	ErrNotParked = errors.New("notify: outbox row is not parked")
)

// Notification is one outbox row: the Slack message one ticket event owes.
type Notification struct {
	ID        int64  `json:"id"`
	EventID   int64  `json:"event_id"`
	TicketID  int64  `json:"ticket_id"`
	DedupeKey string `json:"dedupe_key"`
	Kind      string `json:"kind"`
	State     string `json:"state"`
	// Attempts counts the claims of the row.
	Attempts int `json:"attempts"`
	// LeaseUntil is when the current lease ends, or when a retry is due.
	LeaseUntil time.Time `json:"lease_until"`
	// LeasedBy is the dispatcher holding the row; with Attempts it fences
	// every write of that holder.
	LeasedBy string `json:"leased_by,omitempty"`
	// Channel and ThreadTS are where the message goes (or went); TS is the
	// message once it is in Slack.
	Channel  string `json:"channel,omitempty"`
	TS       string `json:"ts,omitempty"`
	ThreadTS string `json:"thread_ts,omitempty"`
	// LastError is the last failure; it stays after a replay.
	LastError string `json:"last_error,omitempty"`
	// Uncertain: some attempt may have posted the message, so Slack is
	// searched before the next post.
	Uncertain      bool            `json:"uncertain"`
	FirstAttemptAt *time.Time      `json:"first_attempt_at,omitempty"`
	History        json.RawMessage `json:"history"`
	CreatedAt      time.Time       `json:"created_at"`
	SentAt         *time.Time      `json:"sent_at,omitempty"`
}

// Outbox reads and writes sweeper.outbox. Every write by a dispatcher is a
// compare-and-set on the lease it holds (leased_by and attempts), so a
// holder whose lease has passed to another changes nothing.
type Outbox struct {
	db ledger.DB
}

// NewOutbox returns an Outbox over db: a pool, or a transaction.
func NewOutbox(db ledger.DB) *Outbox { return &Outbox{db: db} }

const notificationColumns = `id, event_id, ticket_id, dedupe_key, kind, state, attempts, lease_until,
	coalesce(leased_by, ''), coalesce(channel, ''), coalesce(ts, ''), coalesce(thread_ts, ''),
	coalesce(last_error, ''), uncertain, first_attempt_at, history, created_at, sent_at`

func scanNotification(row pgx.CollectableRow) (Notification, error) {
	var n Notification
	err := row.Scan(&n.ID, &n.EventID, &n.TicketID, &n.DedupeKey, &n.Kind, &n.State, &n.Attempts, &n.LeaseUntil,
		&n.LeasedBy, &n.Channel, &n.TS, &n.ThreadTS, &n.LastError, &n.Uncertain, &n.FirstAttemptAt, &n.History,
		&n.CreatedAt, &n.SentAt)
	return n, err
}

// historyEntry appends {at, attempt, event, error} to history, keeping the
// last 50 entries; $N placeholders are the event and the error text.
func historyEntry(event, errText string) string {
	return `(CASE WHEN jsonb_array_length(history) >= 50 THEN history - 0 ELSE history END)
		|| jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('at', now(), 'attempt', attempts,
			'event', ` + event + `::text, 'error', nullif(` + errText + `::text, ''))))`
}

// claimSQL leases up to $3 claimable rows to $1 for $2 seconds. A row is
// claimable when it is pending, its lease or retry time has passed, no
// earlier row of its ticket is still pending (a ticket's messages go out in
// order, one at a time), and it is the ticket's root message or the root
// message is sent (a reply needs its thread) or the ticket has none. A row
// whose previous holder never recorded an outcome becomes uncertain.
const claimSQL = `
	UPDATE sweeper.outbox o
	SET attempts = o.attempts + 1,
	    lease_until = now() + make_interval(secs => $2),
	    leased_by = $1,
	    first_attempt_at = coalesce(o.first_attempt_at, now()),
	    uncertain = o.uncertain OR o.leased_by IS NOT NULL,
	    history = CASE WHEN o.leased_by IS NULL THEN o.history
	              ELSE (CASE WHEN jsonb_array_length(o.history) >= 50 THEN o.history - 0 ELSE o.history END)
	                   || jsonb_build_array(jsonb_build_object('at', now(), 'attempt', o.attempts,
	                      'event', 'lease_expired', 'error', 'the lease of ' || o.leased_by || ' ended without an outcome'))
	              END
	WHERE o.id IN (
		SELECT c.id FROM sweeper.outbox c
		WHERE c.state = 'pending' AND c.lease_until <= now()
		  AND NOT EXISTS (SELECT 1 FROM sweeper.outbox e
		                  WHERE e.ticket_id = c.ticket_id AND e.id < c.id AND e.state = 'pending')
		  AND (c.kind = 'opened' OR NOT EXISTS (SELECT 1 FROM sweeper.outbox r
		                  WHERE r.ticket_id = c.ticket_id AND r.kind = 'opened' AND r.state <> 'sent'))
		ORDER BY c.id
		LIMIT $3
		FOR UPDATE SKIP LOCKED)
	RETURNING ` + notificationColumns

// Claim leases up to limit claimable rows to by for lease, oldest first,
// and returns them with Attempts counting this claim. Concurrent claims
// never return the same row. A claimed row whose previous lease ended
// without an outcome comes back Uncertain.
func (o *Outbox) Claim(ctx context.Context, by string, lease time.Duration, limit int) ([]Notification, error) {
	if by == "" || lease <= 0 || limit <= 0 {
		return nil, fmt.Errorf("notify: claim: need a holder, a lease and a limit (got %q, %s, %d)", by, lease, limit)
	}
	rows, err := o.db.Query(ctx, claimSQL, by, lease.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("notify: claim outbox rows: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, scanNotification)
	if err != nil {
		return nil, fmt.Errorf("notify: claim outbox rows: %w", err)
	}
	return claimed, nil
}

// leaseHeld is the compare-and-set every holder's write carries: $1 id,
// $2 leased_by, $3 attempts.
const leaseHeld = `WHERE id = $1 AND leased_by = $2 AND attempts = $3 AND state = 'pending'`

// ErrLeaseLost: the row is no longer held under the lease the write named
// (it expired and another dispatcher claimed the row, or a person acted).
// Nothing was written.
var ErrLeaseLost = errors.New("notify: outbox lease lost")

func (o *Outbox) update(ctx context.Context, n Notification, what, set string, args ...any) error {
	tag, err := o.db.Exec(ctx, `UPDATE sweeper.outbox SET `+set+` `+leaseHeld,
		append([]any{n.ID, n.LeasedBy, n.Attempts}, args...)...)
	if err != nil {
		return fmt.Errorf("notify: outbox row %d: %s: %w", n.ID, what, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: row %d (%s), %s", ErrLeaseLost, n.ID, n.DedupeKey, what)
	}
	return nil
}

// recordTarget fixes where held row n's message goes before its first
// attempt, so that a later search looks where the post went.
func (o *Outbox) recordTarget(ctx context.Context, n Notification, channel, threadTS string) error {
	return o.update(ctx, n, "record target", `channel = $4, thread_ts = nullif($5, '')`, channel, threadTS)
}

// MarkPosted records that held row n's message is in Slack at channel and
// ts while work remains (the root message's edit), so no later attempt
// posts it again. [ErrLeaseLost] when the lease has passed.
func (o *Outbox) MarkPosted(ctx context.Context, n Notification, channel, ts string) error {
	return o.update(ctx, n, "mark posted", `channel = $4, ts = $5`, channel, ts)
}

// MarkSent records that held row n is done: its message is in Slack at
// channel and ts. [ErrLeaseLost] when the lease has passed, in which case
// the row stays pending and its next holder finds the message by search.
func (o *Outbox) MarkSent(ctx context.Context, n Notification, channel, ts string) error {
	return o.update(ctx, n, "mark sent", `state = 'sent', channel = $4, ts = $5, sent_at = now(),
		leased_by = NULL, lease_until = now(), history = `+historyEntry("'sent'", "''"), channel, ts)
}

// MarkUncertain records an attempt on held row n whose result is unknown
// (cause), and releases the row for a retry after delay. From now on every
// attempt searches Slack before it posts. [ErrLeaseLost] when the lease
// has passed.
func (o *Outbox) MarkUncertain(ctx context.Context, n Notification, cause error, delay time.Duration) error {
	return o.update(ctx, n, "mark uncertain", `uncertain = true, last_error = $4,
		leased_by = NULL, lease_until = now() + make_interval(secs => $5),
		history = `+historyEntry("'uncertain'", "$4"), errorText(cause), delay.Seconds())
}

// Retry records a failed attempt on held row n that certainly did not post
// (event says which: "rate_limited", "failed"), and releases the row for a
// retry after delay. [ErrLeaseLost] when the lease has passed.
func (o *Outbox) Retry(ctx context.Context, n Notification, event string, cause error, delay time.Duration) error {
	return o.update(ctx, n, event, `last_error = $4, leased_by = NULL, lease_until = now() + make_interval(secs => $5),
		history = `+historyEntry("$6", "$4"), errorText(cause), delay.Seconds(), event)
}

// Release gives held row n back untouched, due again after delay: the claim
// made no attempt (the channel was rate limited, the dispatcher stopped),
// so it is not counted. [ErrLeaseLost] when the lease has passed.
func (o *Outbox) Release(ctx context.Context, n Notification, delay time.Duration) error {
	return o.update(ctx, n, "release", `attempts = attempts - 1, leased_by = NULL,
		lease_until = now() + make_interval(secs => $4)`, delay.Seconds())
}

// Park sets held row n aside with the error a person must fix (cause):
// it is not tried again until [Outbox.Replay]. [ErrLeaseLost] when the
// lease has passed.
func (o *Outbox) Park(ctx context.Context, n Notification, cause error) error {
	return o.update(ctx, n, "park", `state = 'parked', last_error = $4, leased_by = NULL, lease_until = now(),
		history = `+historyEntry("'parked'", "$4"), errorText(cause))
}

// parkLater parks, with cause, the pending rows of row n's ticket that
// come after it, were written before cutoff, were never replayed and are
// not held, and returns how many. It follows the parking of n, which was
// held: while n was pending, none of them could be claimed.
func (o *Outbox) parkLater(ctx context.Context, n Notification, cutoff time.Time, cause error) (int, error) {
	tag, err := o.db.Exec(ctx, `UPDATE sweeper.outbox
		SET state = 'parked', last_error = $4, leased_by = NULL, lease_until = now(),
		    history = `+historyEntry("'parked'", "$4")+`
		WHERE ticket_id = $1 AND id > $2 AND state = 'pending' AND created_at < $3
		  AND (leased_by IS NULL OR lease_until <= now())
		  AND NOT history @> jsonb_build_array(jsonb_build_object('event', '`+eventReplayed+`'))`,
		n.TicketID, n.ID, cutoff, errorText(cause))
	if err != nil {
		return 0, fmt.Errorf("notify: park the rows of ticket %d after row %d: %w", n.TicketID, n.ID, err)
	}
	return int(tag.RowsAffected()), nil
}

// eventReplayed is the history event of [Outbox.Replay].
const eventReplayed = "replayed"

// Replay makes parked row id pending again, due now, after the cause was
// fixed. Its last error and history stay; an uncertain row stays uncertain.
// by says who replayed it, for the history. Errors:
// [ErrNotificationNotFound], [ErrNotParked].
func (o *Outbox) Replay(ctx context.Context, id int64, by string) (Notification, error) {
	rows, err := o.db.Query(ctx, `UPDATE sweeper.outbox
		SET state = 'pending', lease_until = now(), leased_by = NULL,
		    history = `+historyEntry("'"+eventReplayed+"'", "'by ' || $2")+`
		WHERE id = $1 AND state = 'parked'
		RETURNING `+notificationColumns, id, by)
	if err != nil {
		return Notification{}, fmt.Errorf("notify: replay outbox row %d: %w", id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, scanNotification)
	if errors.Is(err, pgx.ErrNoRows) {
		found, err := o.Get(ctx, id)
		if err != nil {
			return Notification{}, err
		}
		return Notification{}, fmt.Errorf("%w: row %d is %s", ErrNotParked, id, found.State)
	}
	if err != nil {
		return Notification{}, fmt.Errorf("notify: replay outbox row %d: %w", id, err)
	}
	return n, nil
}

// Get returns outbox row id, or [ErrNotificationNotFound].
func (o *Outbox) Get(ctx context.Context, id int64) (Notification, error) {
	rows, err := o.db.Query(ctx, `SELECT `+notificationColumns+` FROM sweeper.outbox WHERE id = $1`, id)
	if err != nil {
		return Notification{}, fmt.Errorf("notify: outbox row %d: %w", id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, scanNotification)
	if errors.Is(err, pgx.ErrNoRows) {
		return Notification{}, fmt.Errorf("%w: %d", ErrNotificationNotFound, id)
	}
	if err != nil {
		return Notification{}, fmt.Errorf("notify: outbox row %d: %w", id, err)
	}
	return n, nil
}

// OutboxFilter selects rows for [Outbox.List].
type OutboxFilter struct {
	// State is pending, sent, parked, or "" for all.
	State string
	// TicketID, when not 0, keeps one ticket's rows.
	TicketID int64
	// Limit caps the rows; 0 means 1000.
	Limit int
}

// List returns outbox rows, oldest first.
func (o *Outbox) List(ctx context.Context, f OutboxFilter) ([]Notification, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	rows, err := o.db.Query(ctx, `SELECT `+notificationColumns+` FROM sweeper.outbox
		WHERE ($1 = '' OR state = $1) AND ($2 = 0 OR ticket_id = $2)
		ORDER BY id LIMIT $3`, f.State, f.TicketID, limit)
	if err != nil {
		return nil, fmt.Errorf("notify: list outbox: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanNotification)
	if err != nil {
		return nil, fmt.Errorf("notify: list outbox: %w", err)
	}
	return list, nil
}

// Counts returns how many rows are in each state; a state with none is 0.
func (o *Outbox) Counts(ctx context.Context) (map[string]int, error) {
	counts := map[string]int{OutboxPending: 0, OutboxSent: 0, OutboxParked: 0}
	rows, err := o.db.Query(ctx, `SELECT state, count(*) FROM sweeper.outbox GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("notify: count outbox: %w", err)
	}
	var state string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&state, &n}, func() error { counts[state] = n; return nil })
	if err != nil {
		return nil, fmt.Errorf("notify: count outbox: %w", err)
	}
	return counts, nil
}

// root is where a ticket's root message is.
type root struct {
	// Exists: the ticket has an "opened" row. When it does not (a ticket
	// from before the outbox), replies go to the channel on their own.
	Exists    bool
	Sent      bool
	Channel   string
	TS        string
	DedupeKey string
}

func (o *Outbox) rootOf(ctx context.Context, ticketID int64) (root, error) {
	var r root
	err := o.db.QueryRow(ctx, `SELECT state = 'sent', coalesce(channel, ''), coalesce(ts, ''), dedupe_key
		FROM sweeper.outbox WHERE ticket_id = $1 AND kind = 'opened' ORDER BY id LIMIT 1`, ticketID).
		Scan(&r.Sent, &r.Channel, &r.TS, &r.DedupeKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return root{}, nil
	}
	if err != nil {
		return root{}, fmt.Errorf("notify: root message of ticket %d: %w", ticketID, err)
	}
	r.Exists = true
	return r, nil
}

// ticketRoute is what picks a ticket's channel: its workflow and provider,
// from the evidence snapshot.
func ticketRoute(ctx context.Context, db ledger.DB, ticketID int64) (workflow, provider string, err error) {
	err = db.QueryRow(ctx, `SELECT coalesce(evidence->>'workflow', ''), coalesce(evidence->>'provider', '')
		FROM sweeper.tickets WHERE id = $1`, ticketID).Scan(&workflow, &provider)
	if err != nil {
		return "", "", fmt.Errorf("notify: ticket %d: %w", ticketID, err)
	}
	return workflow, provider, nil
}

// errorText is what is stored of an error: its message, bounded.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > 2000 {
		s = s[:2000]
	}
	return strings.ToValidUTF8(s, "")
}
