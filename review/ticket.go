package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	// ResolutionNote is what the person who resolved the ticket wrote.
	ResolutionNote string `json:"resolution_note,omitempty"`
	// ResolutionRecordID is the provider record a done or duplicate
	// resolution named; the ledger row holds the same id.
	ResolutionRecordID string `json:"resolution_record_id,omitempty"`
	// AcknowledgedBy, AcknowledgedAt and AcknowledgedLevel say who last took
	// the ticket, when, and at which escalation level (nil: never).
	AcknowledgedBy    string     `json:"acknowledged_by,omitempty"`
	AcknowledgedAt    *time.Time `json:"acknowledged_at,omitempty"`
	AcknowledgedLevel *int       `json:"acknowledged_level,omitempty"`
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
	// RelookupAfter is when a ticket whose reason [Reason.Relooks] is first
	// looked up again; each later re-lookup waits twice as long, up to
	// RelookupMax. Zero schedules none.
	RelookupAfter time.Duration
	RelookupMax   time.Duration
}

// NextRelookup is when a ticket that has been looked up again done times
// since it opened is next due, counted from now: RelookupAfter doubled
// done times, at most RelookupMax. The zero time means never (no
// RelookupAfter).
func (p Policy) NextRelookup(now time.Time, done int) time.Time {
	if p.RelookupAfter <= 0 {
		return time.Time{}
	}
	wait := p.RelookupAfter
	for range min(done, 30) {
		wait *= 2
		if p.RelookupMax > 0 && wait >= p.RelookupMax {
			break
		}
	}
	if p.RelookupMax > 0 {
		wait = min(wait, p.RelookupMax)
	}
	return now.Add(wait)
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
	results, err := s.ApplyBatch(ctx, []Item{{Op: op, Decision: d, Evidence: ev, Now: now}})
	if err != nil {
		return Applied{}, err
	}
	return results[0].Applied, results[0].Err
}

// Item is one decision to write.
type Item struct {
	Op       ledger.Operation
	Decision Decision
	Evidence Evidence
	Now      time.Time
}

// ItemResult is what writing one Item did.
type ItemResult struct {
	Applied Applied
	Err     error
}

// ApplyBatch writes several decisions in one transaction and one round
// trip: each is a single statement, so a commit — the main cost per
// operation — is shared by the batch. Should the batch fail (one bad item
// aborts the transaction), each item is retried in a transaction of its
// own, so one item's error is its own. The error return is for failures
// that concern every item (the connection).
func (s *Store) ApplyBatch(ctx context.Context, items []Item) ([]ItemResult, error) {
	results, err := s.applyBatchTx(ctx, items)
	if err == nil || len(items) == 1 {
		if err != nil {
			return []ItemResult{{Err: err}}, nil
		}
		return results, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	results = make([]ItemResult, len(items))
	for i, item := range items {
		r, err := s.applyBatchTx(ctx, []Item{item})
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i] = r[0]
	}
	return results, nil
}

// applyReviewSQL moves a pending row to review and opens its ticket and
// the ticket's first event, in one statement: $1 operation id, $2 op_key,
// $3 reason, $4 owner, $5 priority, $6 deadline, $7 evidence, $8 event
// details, $9 when it is first looked up again (NULL: never). It returns
// whether the row moved and the ticket opened.
const applyReviewSQL = `
	WITH moved AS (
		UPDATE ledger.operations SET status = 'review'
		WHERE id = $1 AND status = 'pending'
		RETURNING id
	), ticket AS (
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, relookup_at)
		SELECT id, $2, $3, $4, $5, $6, $7, $9 FROM moved
		ON CONFLICT (operation_id) DO NOTHING
		RETURNING id
	), event AS (
		INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, details, dedupe_key)
		SELECT id, 'opened', 'sweeper', $8, 'ticket:' || id || ':opened' FROM ticket
		ON CONFLICT (dedupe_key) DO NOTHING
		RETURNING ticket_id
	)
	SELECT (SELECT count(*) FROM moved) = 1,
	       coalesce((SELECT id FROM ticket), (SELECT t.id FROM sweeper.tickets t, moved WHERE t.operation_id = moved.id), 0)`

// applyDoneSQL moves a pending row to done: $1 id, $2 provider record id,
// and the identity the lookup was made for: $3 op_key, $4 action, $5
// recipient (empty for none), $6 payload hash.
//
// It does not move a row whose identity is no longer the one looked up,
// that already names another record, nor claim a record another operation
// of the provider already holds: one record proves one operation. The
// caller checks these first ([Prove]); this guard is for the race, and
// leaves the row pending to be decided again.
const applyDoneSQL = `
	UPDATE ledger.operations o SET status = 'done', provider_record_id = $2
	WHERE o.id = $1 AND o.status = 'pending'
	  AND o.op_key = $3 AND o.action = $4 AND coalesce(o.recipient, '') = $5 AND o.payload_hash = $6
	  AND (o.provider_record_id IS NULL OR o.provider_record_id = $2)
	  AND NOT EXISTS (SELECT 1 FROM ledger.operations other
	                  WHERE other.provider = o.provider AND other.provider_record_id = $2 AND other.id <> o.id)
	RETURNING true, 0::bigint`

func (s *Store) applyBatchTx(ctx context.Context, items []Item) ([]ItemResult, error) {
	batch := &pgx.Batch{}
	batch.Queue(ledger.SweeperWriterSQL) // moving a row to review is sweeper's alone
	for _, item := range items {
		op, d := item.Op, item.Decision
		if d.Done {
			batch.Queue(applyDoneSQL, op.ID, d.ProviderRecordID, op.OpKey, op.Action, op.Recipient, op.PayloadHash)
			continue
		}
		evidence, err := json.Marshal(item.Evidence)
		if err != nil {
			return nil, fmt.Errorf("review: evidence for %s: %w", op.OpKey, err)
		}
		owner, deadline := s.policy.OwnerFor(op), item.Now.Add(s.policy.Window)
		details, err := json.Marshal(map[string]any{
			"reason": d.Reason, "owner": owner, "priority": s.policy.Priority, "deadline": deadline, "detail": d.Detail,
		})
		if err != nil {
			return nil, err
		}
		var relookupAt *time.Time
		if d.Reason.Relooks() {
			if at := s.policy.NextRelookup(item.Now, 0); !at.IsZero() {
				relookupAt = &at
			}
		}
		batch.Queue(applyReviewSQL, op.ID, op.OpKey, d.Reason, owner, s.policy.Priority, deadline, evidence, details, relookupAt)
	}

	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("review: apply: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// The records the done items claim are locked first, in sorted order, so
	// that applyDoneSQL's "no other operation holds it" holds against
	// concurrent batches too.
	var keys []string
	for _, item := range items {
		if item.Decision.Done {
			keys = append(keys, ledger.RecordLockKey(item.Op.Provider, item.Decision.ProviderRecordID))
		}
	}
	if len(keys) > 0 {
		slices.Sort(keys)
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(k, 7))
			FROM (SELECT unnest($1::text[]) AS k ORDER BY 1) AS sorted`, keys); err != nil {
			return nil, fmt.Errorf("review: apply: lock records: %w", err)
		}
	}
	br := tx.SendBatch(ctx, batch)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, fmt.Errorf("review: apply: %w", err)
	}
	results := make([]ItemResult, len(items))
	for i, item := range items {
		var settled bool
		err := br.QueryRow().Scan(&settled, &results[i].Applied.TicketID)
		switch {
		case errors.Is(err, pgx.ErrNoRows): // done: the row was no longer pending
		case err != nil:
			br.Close()
			return nil, fmt.Errorf("review: apply %s: %w", item.Op.OpKey, err)
		}
		results[i].Applied.Settled = settled
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("review: apply: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("review: apply: commit: %w", err)
	}
	return results, nil
}

const ticketColumns = `id, operation_id, op_key, reason, owner, priority, escalation_level, state, deadline,
	evidence, version, created_at, updated_at, resolved_at, coalesce(resolution, ''), coalesce(resolved_by, ''),
	coalesce(resolution_note, ''), coalesce(resolution_record_id, ''), coalesce(acknowledged_by, ''),
	acknowledged_at, acknowledged_level`

func scanTicket(row pgx.CollectableRow) (Ticket, error) {
	var t Ticket
	err := row.Scan(&t.ID, &t.OperationID, &t.OpKey, &t.Reason, &t.Owner, &t.Priority, &t.EscalationLevel,
		&t.State, &t.Deadline, &t.Evidence, &t.Version, &t.CreatedAt, &t.UpdatedAt, &t.ResolvedAt,
		&t.Resolution, &t.ResolvedBy, &t.ResolutionNote, &t.ResolutionRecordID, &t.AcknowledgedBy,
		&t.AcknowledgedAt, &t.AcknowledgedLevel)
	return t, err
}

// ListFilter selects tickets for [Store.List].
type ListFilter struct {
	// State is "open", "resolved", or "" for all.
	State string
	// Provider and Reason, when not "", keep the tickets of that provider
	// (as the evidence names it) and of that reason.
	Provider, Reason string
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
		WHERE ($1 = '' OR state = $1) AND ($3 = '' OR evidence->>'provider' = $3) AND ($4 = '' OR reason = $4)
		ORDER BY id LIMIT $2`, f.State, limit, f.Provider, f.Reason)
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
func (s *Store) Get(ctx context.Context, id int64) (Ticket, error) { return getTicket(ctx, s.db, id) }

func getTicket(ctx context.Context, db ledger.DB, id int64) (Ticket, error) {
	rows, err := db.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets WHERE id = $1`, id)
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

// Unstorable reports whether err is the database refusing what a write
// carried — a data exception (text with NUL, a malformed value) or a
// program limit (an index row too large) — rather than a failure that a
// retry can cure. Writing the same thing again would fail forever, so the
// caller writes a ticket saying why instead.
func Unstorable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "54")
}
