package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
)

// TicketReader reads tickets and their audit events, and writes nothing:
// what another package (notify, which tells people about tickets in Slack)
// needs of review's tables, so that it never reads them in SQL of its own.
// Every read is a statement of its own: a ticket's state may change right
// after it (open to resolved, which is final), and the evidence snapshot,
// the operation, the reason and the creation time never do.
type TicketReader interface {
	// Ticket returns ticket id as it is now, or [ErrTicketNotFound].
	Ticket(ctx context.Context, id int64) (Ticket, error)
	// Event returns audit event id, or [ErrEventNotFound].
	Event(ctx context.Context, id int64) (Event, error)
	// Summaries returns the tickets among ids as they are now, without
	// their evidence, ordered by id; an id no ticket has is left out.
	Summaries(ctx context.Context, ids []int64) ([]Summary, error)
	// OpenIDs returns the ids of the tickets open now whose evidence names
	// provider and whose reason is reason, in id order: one statement,
	// however many tickets were ever opened.
	OpenIDs(ctx context.Context, provider string, reason proof.Reason) ([]int64, error)
	// OpenedSince counts the tickets opened at or after since for
	// operations of provider written (created) at or before writtenBy; a
	// zero writtenBy bounds nothing.
	OpenedSince(ctx context.Context, provider string, since, writtenBy time.Time) (int, error)
	// Backlog is what became of provider's operations written by
	// writtenBy (zero: now) since since: [ledger.Store.Backlog] on the
	// table the tickets' operations live in.
	Backlog(ctx context.Context, provider string, since, writtenBy time.Time) (settled, pending int, err error)
}

// Summary is what a list shows of a ticket: no evidence, but the workflow
// and the provider its evidence names.
type Summary struct {
	ID        int64
	OpKey     string
	Reason    proof.Reason
	State     string
	Workflow  string
	Provider  string
	CreatedAt time.Time
}

// ErrEventNotFound: no audit event has the given id.
var ErrEventNotFound = errors.New("ticket event not found")

// Tickets reads tickets and their events, and nothing of the ledger: it
// has no method that could read an operation, so it needs no ledger table.
// [Reader] adds the reads that join the tickets to their operations.
type Tickets struct {
	db ledger.DB
}

// NewTickets returns a ticket-only reader over db: a pool, or a
// transaction to read in.
func NewTickets(db ledger.DB) *Tickets { return &Tickets{db: db} }

// Reader is the [TicketReader] over a database: [Tickets], and the counts
// of open tickets by provider that `sweeper providers` and the state
// gauges show, which join the tickets to their operations in one ledger
// table.
type Reader struct {
	*Tickets
	ledger *ledger.Table
}

var _ TicketReader = (*Reader)(nil)

// NewReader returns a Reader over db (a pool, or a transaction to read in)
// whose counts by provider join the tickets to the operations of table t.
// t is required: [ledger.Native] for sweeper's own table; nil panics.
func NewReader(db ledger.DB, t *ledger.Table) *Reader {
	if t == nil {
		panic("review.NewReader: nil ledger table (pass ledger.Native() or the configured table)")
	}
	return &Reader{Tickets: NewTickets(db), ledger: t}
}

// Ticket returns ticket id as it is now, or [ErrTicketNotFound]
// ([TicketReader.Ticket]).
func (r *Tickets) Ticket(ctx context.Context, id int64) (Ticket, error) {
	return getTicket(ctx, r.db, id)
}

// Event returns audit event id, or [ErrEventNotFound] ([TicketReader.Event]).
func (r *Tickets) Event(ctx context.Context, id int64) (Event, error) {
	rows, err := r.db.Query(ctx, `SELECT id, ticket_id, kind, actor, at, details
		FROM sweeper.ticket_events WHERE id = $1`, id)
	if err != nil {
		return Event{}, fmt.Errorf("read ticket event %d: %w", id, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Event])
	if errors.Is(err, pgx.ErrNoRows) {
		return Event{}, fmt.Errorf("%w: %d", ErrEventNotFound, id)
	}
	if err != nil {
		return Event{}, fmt.Errorf("read ticket event %d: %w", id, err)
	}
	return e, nil
}

// Summaries is [TicketReader.Summaries].
func (r *Tickets) Summaries(ctx context.Context, ids []int64) ([]Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := r.db.Query(ctx, `SELECT id, op_key, reason, state,
			coalesce(evidence->>'workflow', ''), coalesce(evidence->>'provider', ''), created_at
		FROM sweeper.tickets WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d tickets: %w", len(ids), err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Summary])
	if err != nil {
		return nil, fmt.Errorf("read %d tickets: %w", len(ids), err)
	}
	return list, nil
}

// OpenIDs is [TicketReader.OpenIDs].
func (r *Tickets) OpenIDs(ctx context.Context, provider string, reason proof.Reason) ([]int64, error) {
	rows, err := r.db.Query(ctx, `SELECT id FROM sweeper.tickets
		WHERE state = 'open' AND evidence->>'provider' = $1 AND reason = $2 ORDER BY id`, provider, reason)
	if err != nil {
		return nil, fmt.Errorf("read the open %s tickets of provider %q: %w", reason, provider, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read the open %s tickets of provider %q: %w", reason, provider, err)
	}
	return ids, nil
}

// Backlog implements [TicketReader].
func (r *Reader) Backlog(ctx context.Context, provider string, since, writtenBy time.Time) (settled, pending int, err error) {
	return r.ledger.Store(r.db).Backlog(ctx, provider, since, writtenBy)
}

// OpenedSince implements [TicketReader].
func (r *Reader) OpenedSince(ctx context.Context, provider string, since, writtenBy time.Time) (int, error) {
	var until *time.Time
	if !writtenBy.IsZero() {
		until = &writtenBy
	}
	var n int
	err := r.db.QueryRow(ctx, `SELECT count(*) FROM sweeper.tickets t JOIN `+r.ledger.OperationsSQL()+` o ON o.id = t.operation_id
		WHERE o.provider = $1 AND t.created_at >= $2 AND ($3::timestamptz IS NULL OR o.created_at <= $3)`, provider, since, until).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count the tickets of provider %q opened since %s: %w", provider, since.Format(time.RFC3339), err)
	}
	return n, nil
}

// CountOpen counts the open tickets of reason for operations of provider.
func (r *Reader) CountOpen(ctx context.Context, provider string, reason proof.Reason) (int64, error) {
	var n int64
	err := r.db.QueryRow(ctx, `SELECT count(*) FROM sweeper.tickets t JOIN `+r.ledger.OperationsSQL()+` o ON o.id = t.operation_id
		WHERE o.provider = $1 AND t.state = 'open' AND t.reason = $2`, provider, reason).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count the open %s tickets of provider %q: %w", reason, provider, err)
	}
	return n, nil
}

// OpenCount is how many tickets of Reason are open, opened within the age
// bucket Age: <1h, 1h-1d, 1d-7d or >7d ago.
type OpenCount struct {
	Reason proof.Reason
	Age    string
	Count  int64
}

// OpenCounts counts the open tickets by reason and age bucket (see
// [OpenCount]); a bucket without tickets is left out.
func (r *Tickets) OpenCounts(ctx context.Context) ([]OpenCount, error) {
	rows, err := r.db.Query(ctx, `SELECT reason, CASE
			WHEN now() - created_at < interval '1 hour' THEN '<1h'
			WHEN now() - created_at < interval '1 day' THEN '1h-1d'
			WHEN now() - created_at < interval '7 days' THEN '1d-7d'
			ELSE '>7d' END, count(*)
		FROM sweeper.tickets WHERE state = 'open' GROUP BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("count open tickets: %w", err)
	}
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[OpenCount])
	if err != nil {
		return nil, fmt.Errorf("count open tickets: %w", err)
	}
	return counts, nil
}

// Labels are what a silence's matchers read of a ticket: its provider,
// workflow, reason, owner and escalation level. Count is how many open
// tickets share them, in [Tickets.OpenLabels].
type Labels struct {
	Provider        string `json:"provider"`
	Workflow        string `json:"workflow"`
	Reason          string `json:"reason"`
	Owner           string `json:"owner"`
	EscalationLevel string `json:"escalation_level"`
	Count           int64  `json:"count,omitempty"`
}

// LabelsOf returns ticket t's [Labels].
func LabelsOf(t Ticket) Labels {
	var ev struct{ Provider, Workflow string }
	_ = json.Unmarshal(t.Evidence, &ev) // unreadable evidence: no provider, no workflow
	return Labels{Provider: ev.Provider, Workflow: ev.Workflow, Reason: string(t.Reason), Owner: t.Owner,
		EscalationLevel: strconv.Itoa(t.EscalationLevel)}
}

// OpenLabels counts the open tickets by their [Labels].
func (r *Tickets) OpenLabels(ctx context.Context) ([]Labels, error) {
	rows, err := r.db.Query(ctx, `SELECT coalesce(evidence->>'provider', ''), coalesce(evidence->>'workflow', ''),
			reason, owner, escalation_level::text, count(*)
		FROM sweeper.tickets WHERE state = 'open' GROUP BY 1, 2, 3, 4, 5`)
	if err != nil {
		return nil, fmt.Errorf("count open tickets by labels: %w", err)
	}
	labels, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Labels])
	if err != nil {
		return nil, fmt.Errorf("count open tickets by labels: %w", err)
	}
	return labels, nil
}

// OpenedKey is the dedupe key of ticket id's [EventOpened] event, which
// its outbox row and its root message in Slack carry too.
func OpenedKey(id int64) string { return EventKey(id, EventOpened) }
