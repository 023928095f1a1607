// Package outbox is the store of sweeper's notifications: the outbox
// (sweeper.outbox), the alert groups and the provider incidents whose
// messages it holds. It is the first stage of the notify pipeline; message
// building (package notify/message) and delivery (package notify and its
// receivers) come after it, and it knows nothing of either.
//
// Every ticket event has one row in the outbox, written by a database
// trigger in the transaction that changed the ticket (and every incident's
// start and end one, by the trigger on sweeper.provider_health). A
// dispatcher claims rows with a lease, posts each one's message and records
// its channel and ts. Because chat.postMessage has no idempotency key, an
// attempt whose result is unknown marks its row uncertain, and the next
// attempt first searches Slack for a message carrying the row's dedupe key
// in its metadata and adopts it when found. The search reads only the
// windows in which an earlier attempt could have posted (from its claim to
// the end of its lease), so it ends, whatever came after in the channel.
// Errors a person must fix park the row, to be replayed afterwards, or
// dismissed when it can never succeed. A row nobody needs posted is final
// without a message: skipped (its ticket settled first, or Slack is off)
// or folded (its alert group's message counts it, past the group's limit
// of alerts in its thread), or silenced (a person's silence matched its
// ticket when it was due: see silenced.go and package notify/silence).
package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

// Outbox row states.
const (
	// StatePending: the message is owed; the row is claimable once its
	// lease_until has passed.
	StatePending = "pending"
	// StateSent: the message is in Slack, at Channel and TS. Final.
	StateSent = "sent"
	// StateParked: Slack refused the message for a reason a person must fix
	// (LastError, ErrorCode); [Store.Replay] makes it pending again.
	StateParked = "parked"
	// StateDismissed: a person closed the parked row for good
	// ([Store.Dismiss]); who and why are in its history. Final.
	StateDismissed = "dismissed"
	// StateSkipped: the message was never posted because nobody needs it
	// (ErrorCode says why: [CodeSettledBeforeAlert], [CodeNoReceiver]).
	// Final.
	StateSkipped = "skipped"
	// StateFolded: the message was never posted because its alert group
	// already shows as many of its tickets as it may
	// (slack.group_detail_limit): the ticket is counted in the group's
	// message instead, whose id the row's GroupID holds. ErrorCode says
	// why ([CodeOverDetailLimit], [CodeFoldedTicket]). Final.
	StateFolded = "folded"
)

// Receivers: where a row's message goes (the row's Receiver). The enqueue
// trigger writes one row per ticket event per receiver the event is routed
// to (sweeper.routes, see [Routes.SetRoutes]); alert groups' and incidents'
// rows are Slack's.
const (
	ReceiverSlack     = "slack"
	ReceiverPagerDuty = "pagerduty"
	ReceiverWebhook   = "webhook"
)

// Receivers lists the receivers a route may name.
var Receivers = []string{ReceiverSlack, ReceiverPagerDuty, ReceiverWebhook}

// Event kinds with a meaning for the outbox.
const (
	// KindOpened is the event whose message is a ticket's root message (or
	// its alert in an alert group's thread); every other kind is a reply in
	// the thread of the ticket's root. A ticket's first alert is of this
	// kind whatever its event: the Slack row of the silence_ended event of
	// a ticket a silence held from its opening is one too
	// ([Store.ReleaseAsFirstAlert]).
	KindOpened = "opened"
	// KindRootRemoved is the event the dispatcher writes when a ticket's
	// root message is no longer in Slack and nothing else replaces it: its
	// message is the new root, with the ticket's current state.
	KindRootRemoved = "slack_root_removed"
	// KindIncidentOpened is the row of a provider incident's start: its
	// message is the incident's root message.
	KindIncidentOpened = "incident_opened"
	// KindIncidentClosed is the row of a provider incident's end: it edits
	// the incident's root message and replies in its thread.
	KindIncidentClosed = "incident_closed"
	// KindGroupOpened is the row of an alert group's message: a root whose
	// thread holds its tickets' alerts, edited as they join and resolve.
	KindGroupOpened = "group_opened"
)

// IsRootKind reports whether rows of kind post a root message.
func IsRootKind(kind string) bool {
	return kind == KindOpened || kind == KindRootRemoved || kind == KindIncidentOpened || kind == KindGroupOpened
}

// IsGroupMessage reports whether n is an alert group's own message (rather
// than a ticket's or an incident's).
func (n Notification) IsGroupMessage() bool { return n.GroupID != 0 && n.TicketID == 0 }

// Error codes of parked rows: Slack's own ("channel_not_found",
// "token_revoked", …) or these.
const (
	// CodeExpired: older than the age limit when claimed; not posted.
	CodeExpired = "expired"
	// CodeSearchInconclusive: an earlier attempt may have posted the
	// message, and its window of the channel holds more messages than a
	// search reads; a person looks.
	CodeSearchInconclusive = "search_inconclusive"
	// CodeNoChannel: no channel is configured for the ticket.
	CodeNoChannel = "no_channel"
	// CodeSettledBeforeAlert, on a skipped row: its ticket was resolved
	// before its first alert was due (slack.group_wait), so none of the
	// ticket's messages up to the resolution was posted.
	CodeSettledBeforeAlert = "settled_before_alert"
	// CodeNoReceiver, on a skipped row: nowhere to deliver was configured
	// (Slack off) when the row was due, so it was recorded and not posted,
	// then or later.
	CodeNoReceiver = "no_receiver"
	// CodeOverDetailLimit, on a folded "opened" row: its alert group had
	// given slack.group_detail_limit tickets their own alert already.
	CodeOverDetailLimit = "over_detail_limit"
	// CodeFoldedTicket, on a folded later row: its ticket's first alert was
	// folded, and the event is one the group's counts show (an
	// acknowledgement, a resolution), or one of the messages a person must
	// hear of past the owner's bound (slack.group_detail_limit per
	// slack.group_interval).
	CodeFoldedTicket = "folded_ticket"
)

// holdingCodes are the errors of a parked root message that hold back its
// ticket's later messages until a person replays or dismisses it: a wrong
// channel, a token, a scope would refuse them alike, and an expired root is
// waited for on purpose. A root parked for any other reason, dismissed, or
// removed from Slack holds nothing back: the ticket's next message becomes
// its new root.
var holdingCodes = []string{
	CodeExpired, CodeNoChannel,
	"channel_not_found", "not_in_channel", "is_archived",
	"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
	"no_permission", "missing_scope", "not_allowed_token_type", "ekm_access_denied", "restricted_action",
}

var (
	// ErrNotFound: no outbox row has the given id.
	ErrNotFound = errors.New("outbox row not found")
	// ErrNotParked: only a parked row can be replayed or dismissed.
	ErrNotParked = errors.New("outbox row is not parked")
)

// Notification is one outbox row: the Slack message one ticket event owes.
type Notification struct {
	ID int64 `json:"id"`
	// Receiver is where the row's message goes: ReceiverSlack (every row
	// of an alert group or incident), ReceiverPagerDuty or
	// ReceiverWebhook. Each receiver's dispatcher claims only its rows.
	Receiver string `json:"receiver"`
	// EventID and TicketID are the ticket event the row delivers; 0 for an
	// incident's row.
	EventID  int64 `json:"event_id"`
	TicketID int64 `json:"ticket_id"`
	// IncidentID is the provider incident whose start or end the row
	// delivers (KindIncidentOpened, KindIncidentClosed); 0 for a ticket's
	// row. A row belongs to exactly one ticket or one incident.
	IncidentID int64 `json:"incident_id,omitempty"`
	// GroupID, on a ticket's "opened" row, is the alert group whose thread
	// holds the ticket's alert (or, folded, whose message counts it); on a
	// ticket's later row, folded, the group that counts it; on a row with
	// no ticket and no incident, the group whose message the row is
	// (KindGroupOpened).
	GroupID   int64  `json:"group_id,omitempty"`
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
	// Destination is where the message goes (or went): Slack's channel,
	// "pagerduty", "webhook"; ThreadTS the Slack thread it is a reply in.
	// Reference is how the receiver names what it delivered: Slack's ts,
	// PagerDuty's dedup key, the webhook's event id. (Their JSON names are
	// the ones `sweeper outbox list --json` has always printed.)
	Destination string `json:"channel,omitempty"`
	Reference   string `json:"ts,omitempty"`
	ThreadTS    string `json:"thread_ts,omitempty"`
	// LastError is the last failure; it stays after a replay. ErrorCode is
	// its code, for a parked row: Slack's error, or one of the Code
	// constants.
	LastError string `json:"last_error,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	// Uncertain: some attempt's result was unknown. SearchWindows are where
	// and when such attempts may have posted the message and nobody has
	// looked yet: the next attempt searches them before it posts.
	Uncertain      bool           `json:"uncertain"`
	SearchWindows  []SearchWindow `json:"search_windows,omitempty"`
	FirstAttemptAt *time.Time     `json:"first_attempt_at,omitempty"`
	// ClaimedAt is when the current (or last) claim was made.
	ClaimedAt *time.Time      `json:"claimed_at,omitempty"`
	History   json.RawMessage `json:"history"`
	CreatedAt time.Time       `json:"created_at"`
	SentAt    *time.Time      `json:"sent_at,omitempty"`
	// ReplayedAt is when a person last replayed the row.
	ReplayedAt *time.Time `json:"replayed_at,omitempty"`
	// RemovedAt, on a root message, is when it was found missing from
	// Slack (deleted): the ticket's next message is a new root.
	RemovedAt *time.Time `json:"removed_at,omitempty"`
	// SilenceID, on a silenced row, is the silence that held its message.
	SilenceID int64 `json:"silence_id,omitempty"`

	// NewRoot is set by the dispatcher while a row that is not its ticket's
	// "opened" event is being posted as the ticket's root message, and says
	// why (package message's NewRootUndelivered or NewRootRemoved); ""
	// otherwise. Not stored.
	NewRoot string `json:"-"`
}

// SearchWindow is where, and between which times, an attempt whose result
// is unknown may have posted a message: from its claim to the end of its
// lease, in Channel, in the thread ThreadTS ("" for the channel itself).
// Channel "" means the attempt recorded no target before its holder was
// lost: the window is Searched where the message goes now.
type SearchWindow struct {
	Channel  string    `json:"channel"`
	ThreadTS string    `json:"thread_ts"`
	From     time.Time `json:"from"`
	Until    time.Time `json:"until"`
}

// Store reads and writes sweeper.outbox ([Groups], [Incidents] and
// [Routes] are the stores of the alert groups, the incidents and the
// routes). Every write by a dispatcher is a
// compare-and-set on the lease it holds (leased_by and attempts), so a
// holder whose lease has passed to another changes nothing.
type Store struct {
	db       ledger.DB
	receiver string
}

// NewStore returns a Store over db: a pool, or a transaction. It claims
// Slack's rows; [Store.For] another receiver's.
func NewStore(db ledger.DB) *Store { return &Store{db: db} }

// For returns a Store over the same database whose claims take receiver's
// rows only ("" is Slack). Every other method reads or writes rows by id,
// or all receivers' rows.
func (s *Store) For(receiver string) *Store { return &Store{db: s.db, receiver: receiver} }

// Receiver is the receiver whose rows the Store claims.
func (s *Store) Receiver() string { return cmp.Or(s.receiver, ReceiverSlack) }

const notificationColumns = `id, receiver, coalesce(event_id, 0), coalesce(ticket_id, 0), coalesce(incident_id, 0), coalesce(group_id, 0), dedupe_key, kind, state, attempts, lease_until,
	coalesce(leased_by, ''), coalesce(destination, ''), coalesce(reference, ''), coalesce(thread_ts, ''),
	coalesce(last_error, ''), coalesce(error_code, ''), uncertain, search_windows, first_attempt_at, claimed_at,
	history, created_at, sent_at, replayed_at, removed_at, coalesce(silence_id, 0)`

func scanNotification(row pgx.CollectableRow) (Notification, error) {
	var n Notification
	var windows []byte
	err := row.Scan(&n.ID, &n.Receiver, &n.EventID, &n.TicketID, &n.IncidentID, &n.GroupID, &n.DedupeKey, &n.Kind, &n.State, &n.Attempts, &n.LeaseUntil,
		&n.LeasedBy, &n.Destination, &n.Reference, &n.ThreadTS, &n.LastError, &n.ErrorCode, &n.Uncertain, &windows,
		&n.FirstAttemptAt, &n.ClaimedAt, &n.History, &n.CreatedAt, &n.SentAt, &n.ReplayedAt, &n.RemovedAt, &n.SilenceID)
	if err != nil {
		return n, err
	}
	if err := json.Unmarshal(windows, &n.SearchWindows); err != nil {
		return n, fmt.Errorf("outbox row %d: read its search windows: %w", n.ID, err)
	}
	return n, nil
}

// windowOfAttempt is the search window of the attempt that holds the row
// (or held it, in a claim, before the SET), as a one-element jsonb array.
// Its channel is "" when the attempt recorded no target: it is Searched
// where the row's message goes now.
const windowOfAttempt = `jsonb_build_array(jsonb_build_object('channel', coalesce(destination, ''),
	'thread_ts', coalesce(thread_ts, ''), 'from', coalesce(claimed_at, first_attempt_at, now()),
	'until', lease_until))`

// historyEntry appends {at, attempt, event, error} to history, keeping the
// last 50 entries; $N placeholders are the event and the error text.
func historyEntry(event, errText string) string {
	return `(CASE WHEN jsonb_array_length(history) >= 50 THEN history - 0 ELSE history END)
		|| jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('at', now(), 'attempt', attempts,
			'event', ` + event + `::text, 'error', nullif(` + errText + `::text, ''))))`
}

// claimSQL leases up to $3 claimable rows to $1 for $2 seconds. A row is
// claimable when it is pending, its lease or retry time has passed, and no
// earlier row of its ticket (or incident) is still pending (a ticket's
// messages go out in order, one at a time) or is its root message parked for one of the
// holding codes $4 (a reply would be refused alike, or the root is waited
// for). A row whose previous holder never recorded an outcome becomes
// uncertain, with that holder's window to search.
const claimSQL = `
	UPDATE sweeper.outbox o
	SET attempts = o.attempts + 1,
	    lease_until = now() + make_interval(secs => $2),
	    leased_by = $1,
	    claimed_at = now(),
	    first_attempt_at = coalesce(o.first_attempt_at, now()),
	    uncertain = o.uncertain OR o.leased_by IS NOT NULL,
	    search_windows = CASE WHEN o.leased_by IS NULL THEN o.search_windows
	                     ELSE o.search_windows || ` + windowOfAttempt + ` END,
	    history = CASE WHEN o.leased_by IS NULL THEN o.history
	              ELSE (CASE WHEN jsonb_array_length(o.history) >= 50 THEN o.history - 0 ELSE o.history END)
	                   || jsonb_build_array(jsonb_build_object('at', now(), 'attempt', o.attempts,
	                      'event', 'lease_expired', 'error', 'the lease of ' || o.leased_by || ' ended without an outcome'))
	              END
	WHERE o.id IN (
		SELECT c.id FROM sweeper.outbox c
		WHERE c.state = 'pending' AND c.lease_until <= now() AND c.receiver = $6
		  AND (c.kind <> 'opened' OR c.created_at <= now() - make_interval(secs => $5))
		  AND NOT EXISTS (SELECT 1 FROM sweeper.outbox g
		                  WHERE c.ticket_id IS NOT NULL AND g.group_id = c.group_id AND g.ticket_id IS NULL
		                    AND g.state = 'pending')
		  AND NOT EXISTS (SELECT 1 FROM sweeper.outbox e
		                  WHERE (e.ticket_id = c.ticket_id OR e.incident_id = c.incident_id) AND e.id < c.id
		                    AND e.receiver = c.receiver
		                    AND (e.state = 'pending'
		                         OR (e.state = 'parked' AND e.kind IN ('opened', 'incident_opened')
		                             AND e.error_code = ANY($4))))
		ORDER BY c.id
		LIMIT $3
		FOR UPDATE SKIP LOCKED)
	RETURNING ` + notificationColumns

// Claim leases up to limit claimable rows to by for lease, oldest first,
// and returns them, oldest first, with Attempts counting this claim. Concurrent claims
// never return the same row. A claimed row whose previous lease ended
// without an outcome comes back Uncertain. A ticket's "opened" row is
// claimable only once it is older than groupWait ([Store.ClaimAfter]); Claim
// waits for none.
func (s *Store) Claim(ctx context.Context, by string, lease time.Duration, limit int) ([]Notification, error) {
	return s.ClaimAfter(ctx, by, lease, limit, 0)
}

// ClaimAfter is [Store.Claim] with the wait of each ticket's "opened" row
// (slack.group_wait): it is claimable only once it is older than groupWait.
func (s *Store) ClaimAfter(ctx context.Context, by string, lease time.Duration, limit int, groupWait time.Duration) ([]Notification, error) {
	if by == "" || lease <= 0 || limit <= 0 || groupWait < 0 {
		return nil, fmt.Errorf("claim outbox rows: need a holder, a lease, a limit and a wait of at least 0 (got %q, %s, %d, %s)",
			by, lease, limit, groupWait)
	}
	rows, err := s.db.Query(ctx, claimSQL, by, lease.Seconds(), limit, holdingCodes, groupWait.Seconds(), s.Receiver())
	if err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, scanNotification)
	if err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	// UPDATE … RETURNING keeps no order: the oldest first, as promised.
	slices.SortFunc(claimed, func(a, b Notification) int { return cmp.Compare(a.ID, b.ID) })
	return claimed, nil
}

// leaseHeld is the compare-and-set every holder's write carries: $1 id,
// $2 leased_by, $3 attempts.
const leaseHeld = `WHERE id = $1 AND leased_by = $2 AND attempts = $3 AND state = 'pending'`

// ErrLeaseLost: the row is no longer held under the lease the write named
// (it expired and another dispatcher claimed the row, or a person acted).
// Nothing was written.
var ErrLeaseLost = errors.New("outbox lease lost")

func (s *Store) update(ctx context.Context, n Notification, what, set string, args ...any) error {
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.outbox SET `+set+` `+leaseHeld,
		append([]any{n.ID, n.LeasedBy, n.Attempts}, args...)...)
	if err != nil {
		return fmt.Errorf("outbox row %d: %s: %w", n.ID, what, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: row %d (%s), %s", ErrLeaseLost, n.ID, n.DedupeKey, what)
	}
	return nil
}

// RecordTarget fixes where held row n's message goes before its first
// attempt, so that a later search looks where the post went.
func (s *Store) RecordTarget(ctx context.Context, n Notification, channel, threadTS string) error {
	return s.update(ctx, n, "record target", `destination = $4, thread_ts = nullif($5, '')`, channel, threadTS)
}

// MarkPosted records that held row n's message is in Slack at channel and
// ts while work remains (the root message's edit), so no later attempt
// posts it again. [ErrLeaseLost] when the lease has passed.
func (s *Store) MarkPosted(ctx context.Context, n Notification, channel, ts string) error {
	return s.update(ctx, n, "mark posted", `destination = $4, reference = $5, thread_ts = nullif($6, ''), search_windows = '[]'`,
		channel, ts, n.ThreadTS)
}

// MarkSent records that held row n is done: its message is in Slack at
// channel and ts, in the thread n.ThreadTS ("" for a root message).
// [ErrLeaseLost] when the lease has passed, in which case the row stays
// pending and its next holder finds the message by search. The error of
// an earlier attempt is cleared (its history entry keeps it): a sent row
// shows none.
func (s *Store) MarkSent(ctx context.Context, n Notification, channel, ts string) error {
	return s.update(ctx, n, "mark sent", `state = 'sent', destination = $4, reference = $5, thread_ts = nullif($6, ''),
		sent_at = now(), search_windows = '[]', leased_by = NULL, lease_until = now(), last_error = NULL, error_code = NULL,
		history = `+historyEntry("'sent'", "''"), channel, ts, n.ThreadTS)
}

// MarkUncertain records an attempt on held row n whose result is unknown
// (cause), and releases the row for a retry after delay. The attempt's
// window — from its claim to the end of its lease, where it was posting —
// is Searched before any later post. [ErrLeaseLost] when the lease has
// passed.
func (s *Store) MarkUncertain(ctx context.Context, n Notification, cause error, delay time.Duration) error {
	return s.update(ctx, n, "mark uncertain", `uncertain = true, last_error = $4,
		search_windows = search_windows || `+windowOfAttempt+`,
		leased_by = NULL, lease_until = now() + make_interval(secs => $5),
		history = `+historyEntry("'uncertain'", "$4"), errorText(cause), delay.Seconds())
}

// Searched records, on held row n, that a search found nothing in the
// windows that ended before closedBefore: no message can appear in them
// any more, so they are not Searched again.
func (s *Store) Searched(ctx context.Context, n Notification, closedBefore time.Time) error {
	return s.update(ctx, n, "record the search", `search_windows = coalesce((
		SELECT jsonb_agg(w ORDER BY ord) FROM jsonb_array_elements(search_windows) WITH ORDINALITY AS x(w, ord)
		WHERE (w->>'until')::timestamptz >= $4), '[]')`, closedBefore)
}

// Retry records a failed attempt on held row n that certainly did not post
// (event says which: "rate_limited", "failed"), and releases the row for a
// retry after delay. [ErrLeaseLost] when the lease has passed.
func (s *Store) Retry(ctx context.Context, n Notification, event string, cause error, delay time.Duration) error {
	return s.update(ctx, n, event, `last_error = $4, leased_by = NULL, lease_until = now() + make_interval(secs => $5),
		history = `+historyEntry("$6", "$4"), errorText(cause), delay.Seconds(), event)
}

// Release gives held row n back untouched, due again after delay: the claim
// made no attempt (the channel was rate limited, the dispatcher stopped),
// so it is not counted. [ErrLeaseLost] when the lease has passed.
func (s *Store) Release(ctx context.Context, n Notification, delay time.Duration) error {
	return s.update(ctx, n, "release", `attempts = attempts - 1, leased_by = NULL,
		lease_until = now() + make_interval(secs => $4)`, delay.Seconds())
}

// Park sets held row n aside with the error a person must fix (cause)
// and its code (Slack's error code, or a Code constant): it is not tried
// again until [Store.Replay], or closed by [Store.Dismiss].
// [ErrLeaseLost] when the lease has passed.
func (s *Store) Park(ctx context.Context, n Notification, code string, cause error) error {
	return s.update(ctx, n, "park", `state = 'parked', last_error = $4, error_code = nullif($5, ''),
		leased_by = NULL, lease_until = now(), history = `+historyEntry("'parked'", "$4"), errorText(cause), safetext.Printable(code))
}

// Skip marks held row n skipped, never posted, with its code (a Code
// constant) and why (cause). [ErrLeaseLost] when the lease has passed.
func (s *Store) Skip(ctx context.Context, n Notification, code string, cause error) error {
	return s.update(ctx, n, "skip", `state = 'skipped', error_code = nullif($5, ''), leased_by = NULL, lease_until = now(),
		history = `+historyEntry("'skipped'", "$4"), errorText(cause), safetext.Printable(code))
}

// SkipResolved marks held row n, the "opened" row of a ticket that is
// resolved and was never attempted, skipped (CodeSettledBeforeAlert), and
// with it the ticket's other rows written so far that are pending and not
// held: the events up to the resolution, which nobody needs either. A
// later event's row (a contradiction) is posted as the ticket's root. It
// returns how many rows it skipped. [ErrLeaseLost] when the lease has
// passed.
func (s *Store) SkipResolved(ctx context.Context, n Notification) (int, error) {
	var skipped int
	err := s.db.QueryRow(ctx, `WITH me AS (
			UPDATE sweeper.outbox SET state = 'skipped', error_code = '`+CodeSettledBeforeAlert+`',
				leased_by = NULL, lease_until = now(),
				history = `+historyEntry("'skipped'", "'the ticket was resolved before its first alert was due'")+`
			`+leaseHeld+`
			RETURNING id),
		later AS (
			UPDATE sweeper.outbox SET state = 'skipped', error_code = '`+CodeSettledBeforeAlert+`',
				leased_by = NULL, lease_until = now(),
				history = `+historyEntry("'skipped'", "'the ticket was resolved before its first alert was due'")+`
			WHERE ticket_id = $4 AND id > $1 AND state = 'pending' AND reference IS NULL AND NOT uncertain
			  AND receiver = $6 AND kind <> $5 AND (leased_by IS NULL OR lease_until <= now())
			  AND EXISTS (SELECT 1 FROM me)
			RETURNING id)
		SELECT (SELECT count(*) FROM me) + (SELECT count(*) FROM later)`,
		n.ID, n.LeasedBy, n.Attempts, n.TicketID, review.EventContradicted, cmp.Or(n.Receiver, ReceiverSlack)).Scan(&skipped)
	if err != nil {
		return 0, fmt.Errorf("skip the rows of settled ticket %d from outbox row %d: %w", n.TicketID, n.ID, err)
	}
	if skipped == 0 {
		return 0, fmt.Errorf("%w: row %d (%s), skip", ErrLeaseLost, n.ID, n.DedupeKey)
	}
	return skipped, nil
}

// ParkLater parks, with cause, the pending rows of row n's ticket that
// come after it, were written before cutoff, were never replayed and are
// not held, and returns how many. It follows the parking of n, which was
// held: while n was pending, none of them could be claimed.
func (s *Store) ParkLater(ctx context.Context, n Notification, cutoff time.Time, cause error) (int, error) {
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.outbox
		SET state = 'parked', last_error = $4, error_code = '`+CodeExpired+`', leased_by = NULL, lease_until = now(),
		    history = `+historyEntry("'parked'", "$4")+`
		WHERE ticket_id = $1 AND id > $2 AND state = 'pending' AND created_at < $3 AND receiver = $5
		  AND (leased_by IS NULL OR lease_until <= now())
		  AND NOT history @> jsonb_build_array(jsonb_build_object('event', '`+eventReplayed+`'))`,
		n.TicketID, n.ID, cutoff, errorText(cause), cmp.Or(n.Receiver, ReceiverSlack))
	if err != nil {
		return 0, fmt.Errorf("park the rows of ticket %d after outbox row %d: %w", n.TicketID, n.ID, err)
	}
	return int(tag.RowsAffected()), nil
}

// eventReplayed is the history event of [Store.Replay].
const eventReplayed = "replayed"

// DueSince is when row n became due as it is: when it was written or, when
// a person replayed it since, the last replay.
func (n Notification) DueSince() time.Time {
	since := n.CreatedAt
	var history []struct {
		At    time.Time `json:"at"`
		Event string    `json:"event"`
	}
	// An unreadable history leaves the row's own age, the stricter one.
	_ = json.Unmarshal(n.History, &history)
	for _, h := range history {
		if h.Event == eventReplayed && h.At.After(since) {
			since = h.At
		}
	}
	if n.ReplayedAt != nil && n.ReplayedAt.After(since) {
		since = *n.ReplayedAt
	}
	return since
}

// replaySet is what a replay changes: the row is pending and due now, and
// routed again from the configuration when its message was never posted
// (the windows of uncertain attempts keep where those went). $2 is who.
var replaySet = `state = 'pending', lease_until = now(), leased_by = NULL, replayed_at = now(),
	destination = CASE WHEN reference IS NULL THEN NULL ELSE destination END,
	thread_ts = CASE WHEN reference IS NULL THEN NULL ELSE thread_ts END,
	history = ` + historyEntry("'"+eventReplayed+"'", "'by ' || $2")

// Replay makes parked row id pending again, due now, after the cause was
// fixed; a message never posted is routed again from the configuration as
// it is now. Its last error and history stay; an uncertain row still
// searches its windows before posting. by says who replayed it, for the
// history. Errors: [ErrNotFound], [ErrNotParked].
func (s *Store) Replay(ctx context.Context, id int64, by string) (Notification, error) {
	return s.parkedOne(ctx, id, "replay", replaySet, by)
}

// ReplayNotPosted is [Store.Replay] for a row a person checked is not in
// Slack (after an inconclusive search): the windows in which earlier
// attempts may have posted it are forgotten, so it is posted without a
// search. The history says who vouched for it.
func (s *Store) ReplayNotPosted(ctx context.Context, id int64, by string) (Notification, error) {
	return s.parkedOne(ctx, id, "replay", `search_windows = '[]', `+strings.Replace(replaySet,
		"'by ' || $2", "'by ' || $2 || ', who found the message not posted'", 1), by)
}

// ReplayParked replays every parked row whose error code is code, or with
// code "" every parked row but those parked for their age (CodeExpired:
// replaying them is a choice made one code at a time), and returns them,
// oldest first. A ticket's rows still go out in order.
func (s *Store) ReplayParked(ctx context.Context, code, by string) ([]Notification, error) {
	rows, err := s.db.Query(ctx, `UPDATE sweeper.outbox SET `+replaySet+`
		WHERE state = 'parked' AND CASE WHEN $1 = '' THEN error_code IS DISTINCT FROM '`+CodeExpired+`'
		                                ELSE error_code = $1 END
		RETURNING `+notificationColumns, code, by)
	if err != nil {
		return nil, fmt.Errorf("replay parked outbox rows: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanNotification)
	if err != nil {
		return nil, fmt.Errorf("replay parked outbox rows: %w", err)
	}
	slices.SortFunc(list, func(a, b Notification) int { return cmp.Compare(a.ID, b.ID) })
	return list, nil
}

// Dismiss closes parked row id for good: its message will never be posted
// (the channel is gone, or a person found it in Slack after an inconclusive
// search). by and note go into the row's history. If it was a ticket's root
// message, the ticket's next message becomes its root. Errors:
// [ErrNotFound], [ErrNotParked].
func (s *Store) Dismiss(ctx context.Context, id int64, by, note string) (Notification, error) {
	return s.parkedOne(ctx, id, "dismiss", `state = 'dismissed', leased_by = NULL, lease_until = now(),
		history = (CASE WHEN jsonb_array_length(history) >= 50 THEN history - 0 ELSE history END)
			|| jsonb_build_array(jsonb_build_object('at', now(), 'attempt', attempts, 'event', 'dismissed',
				'by', $2::text, 'note', $3::text))`, by, note)
}

// parkedOne applies set to parked row id ($1; args are $2…) and returns
// the row as it is then.
func (s *Store) parkedOne(ctx context.Context, id int64, what, set string, args ...any) (Notification, error) {
	rows, err := s.db.Query(ctx, `UPDATE sweeper.outbox SET `+set+`
		WHERE id = $1 AND state = 'parked'
		RETURNING `+notificationColumns, append([]any{id}, args...)...)
	if err != nil {
		return Notification{}, fmt.Errorf("%s outbox row %d: %w", what, id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, scanNotification)
	if errors.Is(err, pgx.ErrNoRows) {
		found, err := s.Get(ctx, id)
		if err != nil {
			return Notification{}, err
		}
		return Notification{}, fmt.Errorf("%w: row %d is %s: %s", ErrNotParked, id, found.State, notParkedReason(found.State))
	}
	if err != nil {
		return Notification{}, fmt.Errorf("%s outbox row %d: %w", what, id, err)
	}
	return n, nil
}

// notParkedReason says why a row in state cannot be replayed or
// dismissed, and whether anything will ever send it.
func notParkedReason(state string) string {
	switch state {
	case StatePending:
		return "it is owed already; the next notify pass delivers it"
	case StateSent:
		return "sent rows are final: the message was delivered"
	case StateDismissed:
		return "dismissed rows are final: a person closed it for good"
	case StateSkipped:
		return "skipped rows are final: nobody needed the message (its ticket settled before the alert was due, its receiver is off, or the receiver does not follow the event); nothing will send it"
	case StateFolded:
		return "folded rows are final: the alert group's message counts its ticket instead"
	case StateSilenced:
		return "silenced rows are final: a silence held the message when it was due"
	}
	return "only a parked row can be replayed or dismissed"
}

// Get returns outbox row id, or [ErrNotFound].
func (s *Store) Get(ctx context.Context, id int64) (Notification, error) {
	rows, err := s.db.Query(ctx, `SELECT `+notificationColumns+` FROM sweeper.outbox WHERE id = $1`, id)
	if err != nil {
		return Notification{}, fmt.Errorf("read outbox row %d: %w", id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, scanNotification)
	if errors.Is(err, pgx.ErrNoRows) {
		return Notification{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Notification{}, fmt.Errorf("read outbox row %d: %w", id, err)
	}
	return n, nil
}

// Filter selects rows for [Store.List].
type Filter struct {
	// State is pending, sent, parked, dismissed, skipped, folded,
	// silenced, or "" for all.
	State string
	// States, when not empty, keeps the rows in any of these states (and
	// State, when also set).
	States []string
	// TicketID, when not 0, keeps one ticket's rows.
	TicketID int64
	// Receiver, when not "", keeps one receiver's rows.
	Receiver string
	// Since, when not zero, keeps the rows created at or after it.
	Since time.Time
	// Limit caps the rows; 0 means 1000.
	Limit int
}

// List returns outbox rows, oldest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Notification, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	rows, err := s.db.Query(ctx, `SELECT `+notificationColumns+` FROM sweeper.outbox
		WHERE ($1 = '' OR state = $1) AND ($2 = 0 OR ticket_id = $2)
		  AND (coalesce(cardinality($4::text[]), 0) = 0 OR state = ANY($4)) AND ($5::timestamptz IS NULL OR created_at >= $5)
		  AND ($6 = '' OR receiver = $6)
		ORDER BY id LIMIT $3`, f.State, f.TicketID, limit, f.States, since, f.Receiver)
	if err != nil {
		return nil, fmt.Errorf("list outbox rows: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanNotification)
	if err != nil {
		return nil, fmt.Errorf("list outbox rows: %w", err)
	}
	return list, nil
}

// Counts returns how many rows are in each state: pending, sent and
// parked always (0 when none), dismissed when there are any.
func (s *Store) Counts(ctx context.Context) (map[string]int, error) {
	counts := map[string]int{StatePending: 0, StateSent: 0, StateParked: 0}
	rows, err := s.db.Query(ctx, `SELECT state, count(*) FROM sweeper.outbox GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count outbox rows: %w", err)
	}
	var state string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&state, &n}, func() error { counts[state] = n; return nil })
	if err != nil {
		return nil, fmt.Errorf("count outbox rows: %w", err)
	}
	return counts, nil
}

// Pending returns how many rows are pending and, when there are any, how
// long from now (by the database's clock) until the first of them is due:
// 0 when one is due already. A due row may still wait for an earlier row
// of its ticket; the wait is a lower bound.
func (s *Store) Pending(ctx context.Context) (int, time.Duration, error) {
	var n int
	var wait float64
	err := s.db.QueryRow(ctx, `SELECT count(*), coalesce(greatest(extract(epoch FROM min(lease_until) - now()), 0), 0)::float8
		FROM sweeper.outbox WHERE state = 'pending'`).Scan(&n, &wait)
	if err != nil {
		return 0, 0, fmt.Errorf("count pending outbox rows: %w", err)
	}
	return n, time.Duration(wait * float64(time.Second)), nil
}

// Root is a ticket's live root message: the root message most recently
// posted that is not known to be removed from Slack.
type Root struct {
	// Live: the ticket has one. When it has none, the ticket's next
	// message is posted as a new root.
	Live    bool
	Channel string
	TS      string
	// Thread is where the ticket's replies go: the root's own ts, or the
	// thread of its group's message when the root is a reply there.
	Thread    string
	DedupeKey string
	// Removed: a root message of the ticket was found removed from Slack
	// (why the next root is new, when there is no live one).
	Removed bool
}

// RootOf returns the live root message of row n's ticket, incident or
// group. A sent row's message is a root when it is in no thread, or when it
// is a grouped ticket's alert in its group's thread.
func (s *Store) RootOf(ctx context.Context, n Notification) (Root, error) {
	var r Root
	err := s.db.QueryRow(ctx, `SELECT
			coalesce(live.channel, ''), coalesce(live.ts, ''), coalesce(live.thread, ''), coalesce(live.dedupe_key, ''),
			live.id IS NOT NULL,
			EXISTS (SELECT 1 FROM sweeper.outbox g WHERE `+ownedBy("$4")+` AND g.removed_at IS NOT NULL)
		FROM (SELECT 1) AS one
		LEFT JOIN LATERAL (SELECT id, destination AS channel, reference AS ts, coalesce(thread_ts, reference) AS thread, dedupe_key FROM sweeper.outbox g
			WHERE `+ownedBy("$4")+` AND state = 'sent' AND removed_at IS NULL
			  AND (thread_ts IS NULL OR (group_id IS NOT NULL AND kind = 'opened'))
			ORDER BY sent_at DESC, id DESC LIMIT 1) AS live ON true`, n.TicketID, n.IncidentID, groupOwner(n), s.Receiver()).
		Scan(&r.Channel, &r.TS, &r.Thread, &r.DedupeKey, &r.Live, &r.Removed)
	if err != nil {
		return Root{}, fmt.Errorf("find the root message of %s: %w", owner(n), err)
	}
	return r, nil
}

// Reply is a message in a thread, as its row records it.
type Reply struct {
	Channel, TS, DedupeKey string
}

// IncidentReply returns incident id's closing reply, or a zero reply when
// the incident's end is not in Slack, or is in Slack as its root message.
func (s *Store) IncidentReply(ctx context.Context, id int64) (Reply, error) {
	var r Reply
	err := s.db.QueryRow(ctx, `SELECT destination, reference, dedupe_key FROM sweeper.outbox
		WHERE incident_id = $1 AND kind = $2 AND state = 'sent' AND thread_ts IS NOT NULL AND reference IS NOT NULL
		ORDER BY id DESC LIMIT 1`, id, KindIncidentClosed).Scan(&r.Channel, &r.TS, &r.DedupeKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Reply{}, nil
	}
	if err != nil {
		return Reply{}, fmt.Errorf("find the closing reply of incident %d: %w", id, err)
	}
	return r, nil
}

// ownedBy selects the rows g of one owner, of the receiver in parameter
// receiver: the ticket $1, the incident $2 or the group $3 (its own
// message, not its tickets' rows).
func ownedBy(receiver string) string {
	return `(g.ticket_id = $1 OR g.incident_id = $2 OR (g.group_id = $3 AND g.ticket_id IS NULL)) AND g.receiver = ` + receiver
}

// groupOwner is the group row n is the message of, or 0.
func groupOwner(n Notification) int64 {
	if n.IsGroupMessage() {
		return n.GroupID
	}
	return 0
}

// owner names row n's ticket or incident, for errors.
func owner(n Notification) string {
	if n.IsGroupMessage() {
		return fmt.Sprintf("alert group %d", n.GroupID)
	}
	if n.IncidentID != 0 {
		return fmt.Sprintf("incident %d", n.IncidentID)
	}
	return fmt.Sprintf("ticket %d", n.TicketID)
}

// MarkRemoved records that the root message of row n's ticket or incident
// at channel and ts is no longer in Slack, and reports whether it was its
// root (not known removed before).
func (s *Store) MarkRemoved(ctx context.Context, n Notification, channel, ts string) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.outbox g SET removed_at = now(),
			history = `+historyEntry("'removed_from_slack'", "''")+`
		WHERE `+ownedBy("$6")+` AND destination = $4 AND reference = $5 AND state = 'sent'
		  AND (thread_ts IS NULL OR (group_id IS NOT NULL AND kind = 'opened'))
		  AND removed_at IS NULL`, n.TicketID, n.IncidentID, groupOwner(n), channel, ts, s.Receiver())
	if err != nil {
		return false, fmt.Errorf("mark the root message of %s removed: %w", owner(n), err)
	}
	return tag.RowsAffected() > 0, nil
}

// MarkSentRootRemoved is [Store.MarkSent] for held reply n whose root
// message at channel and rootTS turned out removed when it was to be
// edited: in one transaction, the root is marked removed and a
// KindRootRemoved event is written, whose outbox row posts the new root.
// The event's key names the removed message, so it is written once.
func (s *Store) MarkSentRootRemoved(ctx context.Context, n Notification, channel, rootTS string) error {
	db, ok := s.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return fmt.Errorf("outbox row %d: the outbox's database cannot begin a transaction: give it a pool", n.ID)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("outbox row %d: %w", n.ID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	in := NewStore(tx)
	if _, err := in.MarkRemoved(ctx, n, channel, rootTS); err != nil {
		return err
	}
	if n.TicketID == 0 {
		// An incident or a group has no events to write: its next message, if any,
		// finds no live root and is posted as one.
		if err := in.MarkSent(ctx, n, n.Destination, n.Reference); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("outbox row %d: %w", n.ID, err)
		}
		return nil
	}
	// Review writes the event, in this transaction: its outbox row (the
	// trigger's) commits with the removal, or neither does.
	_, err = review.NewNotes(tx).Note(ctx, n.TicketID, KindRootRemoved, rootTS,
		map[string]string{"channel": channel, "ts": rootTS})
	if err != nil {
		return fmt.Errorf("outbox row %d: %w", n.ID, err)
	}
	if err := in.MarkSent(ctx, n, n.Destination, n.Reference); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("outbox row %d: %w", n.ID, err)
	}
	return nil
}

// errorText is what is stored of an error: its message, bounded, on one
// line and inert ([safetext.Printable]): Slack's or a proxy's text is
// printed by `outbox list` on a terminal, and NUL is refused by
// PostgreSQL.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return safetext.Truncate(safetext.Printable(err.Error()), 2000)
}
