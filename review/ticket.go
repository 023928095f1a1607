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
	"github.com/sweeper/sweeper/proof"
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
	Reason          proof.Reason    `json:"reason"`
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
	// the ticket, when, and at which escalation level (nil: never, or the
	// acknowledgement timed out).
	AcknowledgedBy    string     `json:"acknowledged_by,omitempty"`
	AcknowledgedAt    *time.Time `json:"acknowledged_at,omitempty"`
	AcknowledgedLevel *int       `json:"acknowledged_level,omitempty"`
	// AckLapses counts the acknowledgements that timed out
	// (review.ack_timeout); each has its "ack_timed_out" event.
	AckLapses int `json:"ack_lapses,omitempty"`
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
var ErrTicketNotFound = errors.New("ticket not found")

// Policy says who owns a new ticket, for how long, at which priority.
type Policy struct {
	DefaultOwner   string
	WorkflowOwners map[string]string
	ProviderOwners map[string]string
	Window         time.Duration
	Priority       string
	// RelookupAfter is when a ticket whose reason [proof.Reason.Relooks] is first
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

// TxBeginner is what the store needs: a [ledger.DB] that also begins
// transactions — a pool, or a transaction to compose in, whose Begin opens a
// savepoint.
type TxBeginner interface {
	ledger.DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store writes outcomes and reads tickets.
type Store struct {
	db     TxBeginner
	policy Policy
	ledger *ledger.Table
	// assignees is whom a ticket may be reassigned to.
	assignees Assignees
}

// NewStore returns a Store over db that opens tickets under policy for
// operations of table t: every read and write of an operation goes through
// t's [ledger.Store]. t is required — [ledger.Native] for sweeper's own
// table; there is no default, and nil panics.
func NewStore(db TxBeginner, t *ledger.Table, policy Policy) *Store {
	if t == nil {
		panic("review.NewStore: nil ledger table (pass ledger.Native() or the configured table)")
	}
	return &Store{db: db, policy: policy, ledger: t}
}

// Ledger is the table s's operations live in.
func (s *Store) Ledger() *ledger.Table { return s.ledger }

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
func (s *Store) Apply(ctx context.Context, op ledger.Operation, d proof.Decision, ev proof.Evidence, now time.Time) (Applied, error) {
	results, err := s.ApplyBatch(ctx, []Item{{Op: op, Decision: d, Evidence: ev, Now: now}})
	if err != nil {
		return Applied{}, err
	}
	return results[0].Applied, results[0].Err
}

// Item is one decision to write.
type Item struct {
	Op       ledger.Operation
	Decision proof.Decision
	Evidence proof.Evidence
	Now      time.Time
}

// ItemResult is what writing one Item did.
type ItemResult struct {
	Applied Applied
	Err     error
}

// ApplyBatch writes several decisions in one transaction, in a handful of
// statements whatever their number: the writer's declaration, the done
// items' compare-and-set ([ledger.Store.MoveToDone]: the records' locks, then one
// update), the review items' move ([ledger.Store.MoveToReview]), their tickets,
// and the tickets' "opened" events. A commit — the main cost per
// operation — and every statement are shared by the batch. Should the
// batch fail (one bad item aborts the transaction), each item is retried
// in a transaction of its own, so one item's error is its own. The error
// return is for failures that concern every item (the connection).
//
// Of several items for one operation, one settles it (a done item before a
// review item); the others report nothing written, as they would have,
// written one after the other.
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

// opening is the ticket a review item opens, and its "opened" event's
// details.
type opening struct {
	item       int
	op         ledger.Operation
	reason     proof.Reason
	owner      string
	deadline   time.Time
	evidence   []byte
	details    json.RawMessage
	relookupAt *time.Time
}

// openingFor is the ticket item i opens under the store's policy.
func (s *Store) openingFor(i int, item Item) (opening, error) {
	op, d := item.Op, item.Decision
	evidence, err := json.Marshal(item.Evidence)
	if err != nil {
		return opening{}, fmt.Errorf("evidence for %s: %w", op.OpKey, err)
	}
	o := opening{item: i, op: op, reason: d.Reason, owner: s.policy.OwnerFor(op),
		deadline: item.Now.Add(s.policy.Window), evidence: evidence}
	o.details, err = json.Marshal(OpenedDetails{
		Reason: d.Reason, Owner: o.owner, Priority: s.policy.Priority, Deadline: o.deadline, Detail: d.Detail,
	})
	if err != nil {
		return opening{}, fmt.Errorf("opened event for %s: %w", op.OpKey, err)
	}
	if d.Reason.Relooks() {
		if at := s.policy.NextRelookup(item.Now, 0); !at.IsZero() {
			o.relookupAt = &at
		}
	}
	return o, nil
}

func (s *Store) applyBatchTx(ctx context.Context, items []Item) ([]ItemResult, error) {
	var (
		done      []ledger.DoneItem
		doneItem  []int
		openings  []opening
		reviewIDs []int64
		seen      = map[int64]bool{}
	)
	for i, item := range items {
		if item.Decision.Done {
			done = append(done, ledger.DoneItemOf(item.Op, item.Decision.ProviderRecordID))
			doneItem = append(doneItem, i)
			continue
		}
		if seen[item.Op.ID] { // the first review item for an operation is the one written
			continue
		}
		seen[item.Op.ID] = true
		o, err := s.openingFor(i, item)
		if err != nil {
			return nil, fmt.Errorf("settle batch: %w", err)
		}
		openings = append(openings, o)
		reviewIDs = append(reviewIDs, item.Op.ID)
	}

	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("settle batch: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	results := make([]ItemResult, len(items))
	if len(openings) > 0 {
		// Moving a row to review is sweeper's alone.
		if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
			return nil, fmt.Errorf("settle batch: %w", err)
		}
	}
	moved, err := s.ledger.Store(tx).MoveToDone(ctx, done)
	if err != nil {
		return nil, fmt.Errorf("settle batch: %w", err)
	}
	for j, ok := range moved {
		results[doneItem[j]].Applied.Settled = ok
	}
	inReview, err := s.ledger.Store(tx).MoveToReview(ctx, reviewIDs)
	if err != nil {
		return nil, fmt.Errorf("settle batch: %w", err)
	}
	movedNow := make(map[int64]bool, len(inReview))
	for _, id := range inReview {
		movedNow[id] = true
	}
	openings = slices.DeleteFunc(openings, func(o opening) bool { return !movedNow[o.op.ID] })
	tickets, err := openTickets(ctx, tx, s.policy.Priority, openings)
	if err != nil {
		return nil, fmt.Errorf("settle batch: %w", err)
	}
	for j, o := range openings {
		results[o.item].Applied = Applied{Settled: true, TicketID: tickets[j]}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("settle batch: commit: %w", err)
	}
	return results, nil
}

// openTicketsSQL opens one ticket per element of the arrays $1 operation
// id, $2 op_key, $3 reason, $4 owner, $6 deadline, $7 evidence (JSON
// text), $8 first re-lookup (NULL: none), all at priority $5. It returns
// the operation and ticket id of each ticket it opened, then of each that
// already existed (opened is false for those). One ticket per operation
// holds per kind: an audit ticket ([proof.Reason.Audit]) beside the
// ticket, if any, that settling the operation opened.
const openTicketsSQL = `
	WITH opened AS (
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, relookup_at)
		SELECT t.operation_id, t.op_key, t.reason, t.owner, $5, t.deadline, t.evidence::jsonb, t.relookup_at
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $6::timestamptz[], $7::text[], $8::timestamptz[])
			AS t(operation_id, op_key, reason, owner, deadline, evidence, relookup_at)
		ON CONFLICT (operation_id, audit) DO NOTHING
		RETURNING operation_id, id
	)
	SELECT operation_id, id, true FROM opened
	UNION ALL
	SELECT t.operation_id, t.id, false FROM sweeper.tickets t
	WHERE (t.operation_id, t.audit) IN (SELECT u.operation_id, u.reason IN ('duplicate_effect', 'effect_after_failed')
	                                    FROM unnest($1::bigint[], $3::text[]) AS u(operation_id, reason))
	  AND t.operation_id NOT IN (SELECT operation_id FROM opened)`

// openTickets opens the tickets of the operations just moved to review, in
// one statement, and appends their "opened" events in one more ([appendEvents]).
// It returns each opening's ticket id. An operation that already has a
// ticket keeps it, and gets no second "opened" event: one ticket per
// operation (I4).
func openTickets(ctx context.Context, tx pgx.Tx, priority string, openings []opening) ([]int64, error) {
	if len(openings) == 0 {
		return nil, nil
	}
	n := len(openings)
	opIDs, opKeys, reasons, owners := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	deadlines, evidence, relookups := make([]time.Time, n), make([]string, n), make([]*time.Time, n)
	for i, o := range openings {
		opIDs[i], opKeys[i], reasons[i], owners[i] = o.op.ID, o.op.OpKey, string(o.reason), o.owner
		deadlines[i], evidence[i], relookups[i] = o.deadline, string(o.evidence), o.relookupAt
	}
	rows, err := tx.Query(ctx, openTicketsSQL, opIDs, opKeys, reasons, owners, priority, deadlines, evidence, relookups)
	if err != nil {
		return nil, fmt.Errorf("open %d ticket(s): %w", n, err)
	}
	type ticketRow struct {
		OperationID, ID int64
		Opened          bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ticketRow])
	if err != nil {
		return nil, fmt.Errorf("open %d ticket(s): %w", n, err)
	}
	byOp := make(map[int64]ticketRow, len(got))
	for _, r := range got {
		byOp[r.OperationID] = r
	}
	ids := make([]int64, n)
	var events []newEvent
	for i, o := range openings {
		r := byOp[o.op.ID]
		ids[i] = r.ID
		if r.Opened {
			events = append(events, newEvent{ticketID: r.ID, kind: EventOpened, actor: ActorSweeper,
				details: o.details, key: EventKey(r.ID, EventOpened)})
		}
	}
	if _, err := appendEvents(ctx, tx, events...); err != nil {
		return nil, err
	}
	return ids, nil
}

const ticketColumns = `id, operation_id, op_key, reason, owner, priority, escalation_level, state, deadline,
	evidence, version, created_at, updated_at, resolved_at, coalesce(resolution, ''), coalesce(resolved_by, ''),
	coalesce(resolution_note, ''), coalesce(resolution_record_id, ''), coalesce(acknowledged_by, ''),
	acknowledged_at, acknowledged_level, ack_lapses`

func scanTicket(row pgx.CollectableRow) (Ticket, error) {
	var t Ticket
	err := row.Scan(&t.ID, &t.OperationID, &t.OpKey, &t.Reason, &t.Owner, &t.Priority, &t.EscalationLevel,
		&t.State, &t.Deadline, &t.Evidence, &t.Version, &t.CreatedAt, &t.UpdatedAt, &t.ResolvedAt,
		&t.Resolution, &t.ResolvedBy, &t.ResolutionNote, &t.ResolutionRecordID, &t.AcknowledgedBy,
		&t.AcknowledgedAt, &t.AcknowledgedLevel, &t.AckLapses)
	return t, err
}

// ListFilter selects tickets for [Store.List].
type ListFilter struct {
	// State is "open", "resolved", or "" for all.
	State string
	// Provider and Reason, when not "", keep the tickets of that provider
	// (as the evidence names it) and of that reason.
	Provider, Reason string
	// Since, when not zero, keeps the tickets opened at or after it.
	Since time.Time
	// IDs, when not nil, keeps these tickets alone (none when empty): the
	// tickets of an alert group, as the outbox lists them.
	IDs []int64
	// Limit caps the rows; 0 means 1000.
	Limit int
}

// List returns tickets, oldest first.
func (s *Store) List(ctx context.Context, f ListFilter) ([]Ticket, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	var ids any // NULL: any ticket
	if f.IDs != nil {
		ids = append([]int64{}, f.IDs...) // empty, not NULL: no ticket
	}
	rows, err := s.db.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets
		WHERE ($1 = '' OR state = $1) AND ($3 = '' OR evidence->>'provider' = $3) AND ($4 = '' OR reason = $4)
		  AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::bigint[] IS NULL OR id = ANY($6))
		ORDER BY id LIMIT $2`, f.State, limit, f.Provider, f.Reason, since, ids)
	if err != nil {
		return nil, fmt.Errorf("list tickets: %w", err)
	}
	tickets, err := pgx.CollectRows(rows, scanTicket)
	if err != nil {
		return nil, fmt.Errorf("list tickets: %w", err)
	}
	return tickets, nil
}

// Get returns one ticket, or [ErrTicketNotFound].
func (s *Store) Get(ctx context.Context, id int64) (Ticket, error) { return getTicket(ctx, s.db, id) }

func getTicket(ctx context.Context, db ledger.DB, id int64) (Ticket, error) {
	rows, err := db.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets WHERE id = $1`, id)
	if err != nil {
		return Ticket{}, fmt.Errorf("get ticket %d: %w", id, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, fmt.Errorf("%w: %d", ErrTicketNotFound, id)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("get ticket %d: %w", id, err)
	}
	return t, nil
}

// Events returns a ticket's audit trail, oldest first.
func (s *Store) Events(ctx context.Context, ticketID int64) ([]Event, error) {
	rows, err := s.db.Query(ctx, `SELECT id, ticket_id, kind, actor, at, details
		FROM sweeper.ticket_events WHERE ticket_id = $1 ORDER BY id`, ticketID)
	if err != nil {
		return nil, fmt.Errorf("events of ticket %d: %w", ticketID, err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
	if err != nil {
		return nil, fmt.Errorf("events of ticket %d: %w", ticketID, err)
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

// AcknowledgedAtItsLevel reports whether someone has taken t at the
// escalation level it is at: acknowledging it again changes nothing (it
// is refused as handled), until it escalates or the acknowledgement times
// out.
func (t Ticket) AcknowledgedAtItsLevel() bool {
	return t.AcknowledgedLevel != nil && *t.AcknowledgedLevel == t.EscalationLevel
}
