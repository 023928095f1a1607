package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// Ticket states.
const (
	StateOpen     = "open"
	StateResolved = "resolved"
)

// Ticket is one operation awaiting a person's decision.
type Ticket struct {
	ID              int64           `json:"id"`
	OperationID     int64           `json:"operation_id"`
	OpKey           string          `json:"op_key"`
	Reason          Reason          `json:"reason"`
	Owner           string          `json:"owner"`
	Priority        string          `json:"priority"`
	EscalationLevel int             `json:"escalation_level"`
	State           string          `json:"state"`
	Deadline        time.Time       `json:"deadline"`
	Evidence        json.RawMessage `json:"evidence"`
	Version         int             `json:"version"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	ResolvedAt      *time.Time      `json:"resolved_at,omitempty"`
	Resolution      string          `json:"resolution,omitempty"`
	ResolvedBy      string          `json:"resolved_by,omitempty"`
}

// Event is one entry of a ticket's audit trail.
type Event struct {
	ID       int64           `json:"id"`
	TicketID int64           `json:"ticket_id"`
	Kind     string          `json:"kind"`
	Actor    string          `json:"actor"`
	At       time.Time       `json:"at"`
	Details  json.RawMessage `json:"details"`
}

// EventOpened is the first event of every ticket.
const EventOpened = "opened"

// ActorSweeper is the actor of events sweeper itself causes.
const ActorSweeper = "sweeper"

// ErrTicketNotFound: no ticket has the given id.
var ErrTicketNotFound = errors.New("review: ticket not found")

// Policy says who owns a new ticket, for how long, at which priority.
type Policy struct {
	DefaultOwner   string
	WorkflowOwners map[string]string
	ProviderOwners map[string]string
	Window         time.Duration
	Priority       string
}

// OwnerFor returns the one person who owns op's ticket: the workflow's
// owner, else the provider's, else the default.
func (p Policy) OwnerFor(op ledger.Operation) string {
	if o := p.WorkflowOwners[op.Workflow]; o != "" {
		return o
	}
	if o := p.ProviderOwners[op.Provider]; o != "" {
		return o
	}
	return p.DefaultOwner
}

// DB is what the store needs: a pool, or a transaction to compose in.
type DB interface {
	ledger.DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store writes outcomes and reads tickets.
type Store struct {
	db     DB
	policy Policy
}

// NewStore returns a Store over db that opens tickets under policy.
func NewStore(db DB, policy Policy) *Store { return &Store{db: db, policy: policy} }

// Applied says what [Store.Apply] did.
type Applied struct {
	// Settled is false when the operation was no longer pending: the
	// workflow confirmed it meanwhile, or another replica settled it.
	// Nothing was written then.
	Settled bool
	// TicketID is the ticket opened, for a review decision.
	TicketID int64
}

// Apply writes a decision in one transaction: the compare-and-set on the
// ledger row (pending→done or pending→review), and for a review the ticket
// and its "opened" event. Every write is idempotent — the compare-and-set
// admits one writer, the ticket is unique per operation, the event per
// ticket — so a lookup re-run after a crash finds nothing left to do.
func (s *Store) Apply(ctx context.Context, op ledger.Operation, d Decision, ev Evidence, now time.Time) (Applied, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return Applied{}, fmt.Errorf("review: apply %s: %w", op.OpKey, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	applied, err := s.apply(ctx, tx, op, d, ev, now)
	if err != nil {
		return Applied{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Applied{}, fmt.Errorf("review: apply %s: commit: %w", op.OpKey, err)
	}
	return applied, nil
}

func (s *Store) apply(ctx context.Context, tx pgx.Tx, op ledger.Operation, d Decision, ev Evidence, now time.Time) (Applied, error) {
	ledgerStore := ledger.NewStore(tx)
	if d.Done {
		moved, err := ledgerStore.CompareAndSet(ctx, op.ID, ledger.StatusPending, ledger.StatusDone, d.ProviderRecordID)
		if err != nil {
			return Applied{}, err
		}
		return Applied{Settled: moved}, nil
	}
	moved, err := ledgerStore.CompareAndSet(ctx, op.ID, ledger.StatusPending, ledger.StatusReview, "")
	if err != nil || !moved {
		return Applied{}, err
	}
	evidence, err := json.Marshal(ev)
	if err != nil {
		return Applied{}, fmt.Errorf("review: evidence for %s: %w", op.OpKey, err)
	}
	var ticketID int64
	err = tx.QueryRow(ctx, `
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (operation_id) DO NOTHING
		RETURNING id`,
		op.ID, op.OpKey, d.Reason, s.policy.OwnerFor(op), s.policy.Priority, now.Add(s.policy.Window), evidence,
	).Scan(&ticketID)
	if errors.Is(err, pgx.ErrNoRows) {
		// A ticket exists although the row was pending: someone moved the
		// row back by hand (the trigger forbids that) or a previous ticket
		// outlived its row. Keep the existing ticket; open no second one.
		err := tx.QueryRow(ctx, `SELECT id FROM sweeper.tickets WHERE operation_id = $1`, op.ID).Scan(&ticketID)
		return Applied{Settled: true, TicketID: ticketID}, err
	}
	if err != nil {
		return Applied{}, fmt.Errorf("review: open ticket for %s: %w", op.OpKey, err)
	}
	details, _ := json.Marshal(map[string]any{
		"reason": d.Reason, "owner": s.policy.OwnerFor(op), "priority": s.policy.Priority,
		"deadline": now.Add(s.policy.Window), "detail": d.Detail,
	})
	_, err = tx.Exec(ctx, `
		INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, details, dedupe_key)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (dedupe_key) DO NOTHING`,
		ticketID, EventOpened, ActorSweeper, details, fmt.Sprintf("ticket:%d:%s", ticketID, EventOpened))
	if err != nil {
		return Applied{}, fmt.Errorf("review: audit event for ticket %d: %w", ticketID, err)
	}
	return Applied{Settled: true, TicketID: ticketID}, nil
}

const ticketColumns = `id, operation_id, op_key, reason, owner, priority, escalation_level, state, deadline,
	evidence, version, created_at, updated_at, resolved_at, coalesce(resolution, ''), coalesce(resolved_by, '')`

func scanTicket(row pgx.CollectableRow) (Ticket, error) {
	var t Ticket
	err := row.Scan(&t.ID, &t.OperationID, &t.OpKey, &t.Reason, &t.Owner, &t.Priority, &t.EscalationLevel,
		&t.State, &t.Deadline, &t.Evidence, &t.Version, &t.CreatedAt, &t.UpdatedAt, &t.ResolvedAt,
		&t.Resolution, &t.ResolvedBy)
	return t, err
}

// ListFilter selects tickets for [Store.List].
type ListFilter struct {
	// State is "open", "resolved", or "" for all.
	State string
	// Limit caps the rows; 0 means 1000.
	Limit int
}

// List returns tickets, oldest first.
func (s *Store) List(ctx context.Context, f ListFilter) ([]Ticket, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.db.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets
		WHERE $1 = '' OR state = $1 ORDER BY id LIMIT $2`, f.State, limit)
	if err != nil {
		return nil, fmt.Errorf("review: list tickets: %w", err)
	}
	tickets, err := pgx.CollectRows(rows, scanTicket)
	if err != nil {
		return nil, fmt.Errorf("review: list tickets: %w", err)
	}
	return tickets, nil
}

// Get returns one ticket, or [ErrTicketNotFound].
func (s *Store) Get(ctx context.Context, id int64) (Ticket, error) {
	rows, err := s.db.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets WHERE id = $1`, id)
	if err != nil {
		return Ticket{}, fmt.Errorf("review: get ticket %d: %w", id, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, fmt.Errorf("%w: %d", ErrTicketNotFound, id)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("review: get ticket %d: %w", id, err)
	}
	return t, nil
}

// Events returns a ticket's audit trail, oldest first.
func (s *Store) Events(ctx context.Context, ticketID int64) ([]Event, error) {
	rows, err := s.db.Query(ctx, `SELECT id, ticket_id, kind, actor, at, details
		FROM sweeper.ticket_events WHERE ticket_id = $1 ORDER BY id`, ticketID)
	if err != nil {
		return nil, fmt.Errorf("review: events of ticket %d: %w", ticketID, err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
	if err != nil {
		return nil, fmt.Errorf("review: events of ticket %d: %w", ticketID, err)
	}
	return events, nil
}
