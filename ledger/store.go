package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// DB is what the store needs of a connection: a *pgxpool.Pool, a *pgx.Conn
// or a pgx.Tx, so that store calls compose inside a caller's transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store reads and writes a ledger table: [NativeTable] or one adopted
// ([Table]). Every write is a compare-and-set
// on status; the table's trigger rejects whatever slips past it.
type Store struct {
	db DB
	t  *Table
}

// NewStore returns a Store of table t over db. t is required — [Native]
// for sweeper's own table, the configuration's otherwise: there is no
// default table to fall back to. A nil t panics here rather than on the
// first statement.
func NewStore(db DB, t *Table) *Store {
	if t == nil {
		panic("ledger.NewStore: nil table (pass ledger.Native() or the configured table)")
	}
	return &Store{db: db, t: t}
}

// Store returns a Store of t over db: [NewStore](db, t).
func (t *Table) Store(db DB) *Store { return NewStore(db, t) }

// Table is the table s reads and writes.
func (s *Store) Table() *Table { return s.t }

// Attempt is what a workflow records before it calls a provider.
type Attempt struct {
	// OpKey is the reconciliation key: unique, 1–255 characters, and
	// carried to the provider (metadata, reference field) wherever it can be.
	OpKey string
	// Workflow, Provider and Action name who does what where; all required.
	// Provider must match a [providers.NAME] block of sweeper's config.
	Workflow string
	Provider string
	Action   string
	// SourceID optionally names the record in the workflow's own system.
	SourceID string
	// Recipient is the address, phone number or customer the effect is for.
	Recipient string
	// Payload optionally holds the normalized fields as a JSON object.
	Payload json.RawMessage
	// PayloadHash is computed from Payload when empty; when both are given
	// they must agree.
	PayloadHash string
}

// Claim is the answer to [Store.Claim].
type Claim struct {
	// Owned is true when this call created the row: the caller owns the
	// attempt and may call the provider. When false, the key was already
	// claimed for the same effect and Operation says where it stands —
	// pending means "uncertain, leave it to sweeper", never "retry".
	Owned     bool
	Operation Operation
}

// ConflictError reports a Claim on a key already claimed for a different
// effect. It matches [ErrConflict].
type ConflictError struct {
	OpKey  string
	Fields []string // the columns that differ
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("op_key %s already claimed with a different %s", e.OpKey, strings.Join(e.Fields, ", "))
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Validate checks an attempt before it reaches the database and fills
// PayloadHash from Payload. Its errors name the column.
func (a *Attempt) Validate() error {
	var errs []error
	switch {
	case a.OpKey == "":
		errs = append(errs, errors.New("op_key: required"))
	case utf8.RuneCountInString(a.OpKey) > MaxOpKeyLength:
		errs = append(errs, fmt.Errorf("op_key: longer than %d characters", MaxOpKeyLength))
	}
	for _, f := range []struct{ name, value string }{
		{"workflow", a.Workflow}, {"provider", a.Provider}, {"action", a.Action},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s: required", f.name))
		}
	}
	if len(a.Payload) > 0 {
		hash, err := PayloadHash(a.Payload)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("payload: %w", err))
		case a.PayloadHash == "":
			a.PayloadHash = hash
		case a.PayloadHash != hash:
			errs = append(errs, fmt.Errorf("payload_hash: %s is not the hash of payload (%s)", a.PayloadHash, hash))
		}
	}
	if a.PayloadHash == "" {
		errs = append(errs, errors.New("payload_hash: required (or give payload)"))
	} else if !isHexSHA256(a.PayloadHash) {
		errs = append(errs, errors.New("payload_hash: must be 64 lowercase hex characters"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid attempt: %w", err)
	}
	return nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Claim records an attempt as pending, atomically: of any number of
// concurrent claims on one key exactly one gets Owned. A claim on a key
// already held for the same workflow, provider, action, recipient and payload
// hash returns the existing row with Owned false; any difference is a
// *ConflictError — a key is never silently reused for another effect.
func (s *Store) Claim(ctx context.Context, a Attempt) (Claim, error) {
	if err := a.Validate(); err != nil {
		return Claim{}, err
	}
	var payload any // a nil json.RawMessage must reach the database as NULL
	if len(a.Payload) > 0 {
		payload = string(a.Payload)
	}
	values := []any{a.OpKey, a.Workflow, a.Provider, a.Action, a.SourceID, a.Recipient, a.PayloadHash, payload}
	args := make([]any, len(s.t.sql.claimArgs))
	for i, v := range s.t.sql.claimArgs {
		args[i] = values[v]
	}
	rows, err := s.db.Query(ctx, s.t.sql.claim, args...)
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", a.OpKey, mapError(err))
	}
	op, err := pgx.CollectExactlyOneRow(rows, s.t.scan)
	switch {
	case err == nil:
		return Claim{Owned: true, Operation: op}, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return Claim{}, fmt.Errorf("claim %s: %w", a.OpKey, mapError(err))
	}

	// The key exists. Another claim may have inserted it between our INSERT
	// and this read, but rows are never deleted by sweeper, so it is there.
	existing, err := s.Get(ctx, a.OpKey)
	if err != nil {
		return Claim{}, err
	}
	var differ []string
	for _, f := range []struct{ name, have, want string }{
		{"workflow", existing.Workflow, a.Workflow},
		{"provider", existing.Provider, a.Provider},
		{"action", existing.Action, a.Action},
		{"recipient", existing.Recipient, a.Recipient},
		{"payload_hash", existing.PayloadHash, a.PayloadHash},
	} {
		if _, has := s.t.Column(f.name); has && f.have != f.want {
			differ = append(differ, f.name)
		}
	}
	if len(differ) > 0 {
		return Claim{}, &ConflictError{OpKey: a.OpKey, Fields: differ}
	}
	return Claim{Owned: false, Operation: existing}, nil
}

// Confirm moves a pending operation to done with the provider's record id.
// Confirming a done operation again with the same record id succeeds and
// changes nothing; any other state gives a *StateError. A record another
// operation of the provider's record namespace ([Store.SetRecordNamespaces])
// already holds gives a *RecordHeldError naming it, and the row stays pending: leave it so, sweeper looks it up and opens
// a ticket with both operations for a person. When the record was taken by
// a confirmation still in flight, the refusal comes from the database's
// unique index and, inside a caller's transaction, aborts it.
func (s *Store) Confirm(ctx context.Context, opKey, providerRecordID string) (Operation, error) {
	if providerRecordID == "" {
		return Operation{}, fmt.Errorf("confirm %s: provider record id required", opKey)
	}
	op, err := s.transition(ctx, opKey, StatusPending, StatusDone, providerRecordID)
	var stateErr *StateError
	if errors.As(err, &stateErr) && stateErr.Got == StatusDone {
		current, getErr := s.Get(ctx, opKey)
		if getErr == nil && current.ProviderRecordID == providerRecordID {
			return current, nil
		}
	}
	return op, err
}

// Reject moves a pending operation to failed: the workflow saw a definitive
// rejection from the provider. Rejecting a failed operation again succeeds;
// any other state gives a *StateError.
func (s *Store) Reject(ctx context.Context, opKey string) (Operation, error) {
	op, err := s.transition(ctx, opKey, StatusPending, StatusFailed, "")
	var stateErr *StateError
	if errors.As(err, &stateErr) && stateErr.Got == StatusFailed {
		return s.Get(ctx, opKey)
	}
	return op, err
}

// transition is the compare-and-set every status change goes through. It
// does not take a record another operation of the provider's record
// namespace holds, so that
// the usual collision is an answer, not an error that aborts the caller's
// transaction; the unique index settles a collision with a write in flight.
func (s *Store) transition(ctx context.Context, opKey string, from, to Status, providerRecordID string) (Operation, error) {
	fromWord, toWord, err := s.t.wordsOf(from, to)
	if err != nil {
		return Operation{}, fmt.Errorf("mark %s %s: %w", opKey, to, err)
	}
	rows, err := s.db.Query(ctx, s.t.sql.transition, opKey, fromWord, toWord, providerRecordID)
	if err != nil {
		return Operation{}, s.transitionError(ctx, opKey, to, providerRecordID, err)
	}
	op, err := pgx.CollectExactlyOneRow(rows, s.t.scan)
	if err == nil {
		return op, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Operation{}, s.transitionError(ctx, opKey, to, providerRecordID, err)
	}
	current, err := s.Get(ctx, opKey)
	if err != nil {
		return Operation{}, err
	}
	if current.Status == from && providerRecordID != "" {
		holder, err := s.holderOfKey(ctx, opKey, providerRecordID)
		if err != nil {
			return Operation{}, err
		}
		return Operation{}, &RecordHeldError{OpKey: opKey, RecordID: providerRecordID, Holder: holder}
	}
	return Operation{}, &StateError{OpKey: opKey, Want: from, Got: current.Status}
}

// transitionError explains a failed transition: a record the unique index
// found held becomes a *RecordHeldError, naming the holder when it can
// still be read.
func (s *Store) transitionError(ctx context.Context, opKey string, to Status, providerRecordID string, err error) error {
	err = mapError(err)
	if errors.Is(err, ErrRecordHeld) {
		// Inside a caller's transaction the refusal aborted it and the
		// holder cannot be read; the error says "another operation" then.
		holder, _ := s.holderOfKey(ctx, opKey, providerRecordID)
		return &RecordHeldError{OpKey: opKey, RecordID: providerRecordID, Holder: holder}
	}
	return fmt.Errorf("mark %s %s: %w", opKey, to, err)
}

// holderOfKey is [Store.HolderOf] for the operation with key opKey.
func (s *Store) holderOfKey(ctx context.Context, opKey, recordID string) (string, error) {
	var holder string
	err := s.db.QueryRow(ctx, s.t.sql.holderOfKey, opKey, recordID).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("who holds record %s: %w", recordID, err)
	}
	return holder, nil
}

// StaleCursor is a keyset position in the stale scan: the last row seen.
// The zero value starts from the beginning.
type StaleCursor struct {
	FirstAttemptAt time.Time
	ID             int64
}

// position is the cursor's time as a query parameter: the zero cursor is
// -infinity, before every row (a workflow may well write odd timestamps),
// and a row read from +infinity ([endOfTime]) is +infinity again, so that
// the next page starts after it rather than at it.
func (c StaleCursor) position() pgtype.Timestamptz {
	switch {
	case c.FirstAttemptAt.IsZero(): // the start, or a row read from -infinity
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	case c.FirstAttemptAt.Equal(endOfTime): // a row read from +infinity
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: c.FirstAttemptAt, Valid: true}
}

// LockRecord takes a transaction-scoped advisory lock on the provider's
// record in its record namespace, so that checking who holds it
// ([Store.HolderOf]) and writing the claim are one step across concurrent
// transactions, whichever block of the namespace they write for. Call it
// inside the writing transaction, first; the lock ends with the
// transaction.
func (s *Store) LockRecord(ctx context.Context, provider, recordID string) error {
	return LockRecords(ctx, s.db, []RecordRef{{Provider: provider, RecordID: recordID}})
}

// RecordLockKey is the text whose hash [LockRecords] locks for a record of
// namespace (a block's record namespace, see [Store.SetRecordNamespaces]);
// the ledger's trigger operations_record_once locks the same. A key may
// read alike for two (namespace, record) pairs — a record id may hold ":"
// — which only makes two writers wait for each other, never lets two hold
// one record.
func RecordLockKey(namespace, recordID string) string { return namespace + ":" + recordID }

// HolderOf returns the op_key of another operation of provider's record
// namespace — provider itself or a block reaching the same account — that
// already names recordID as its provider record, or "" when none does. One
// record proves one operation: a second claim on it is not proof.
func (s *Store) HolderOf(ctx context.Context, provider, recordID string, exceptID int64) (string, error) {
	var opKey string
	err := s.db.QueryRow(ctx, s.t.sql.holderOf, provider, recordID, exceptID).Scan(&opKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("who holds record %s: %w", recordID, err)
	}
	return opKey, nil
}

// Holder is an operation that names a provider record as its own.
type Holder struct {
	RecordID    string
	OperationID int64
	OpKey       string
}

// HoldersOf returns every operation of provider's record namespace that
// names one of recordIDs as its provider record: [Store.HolderOf] for many
// records in one query. The caller leaves out the operation it asks for,
// as HolderOf's exceptID does.
func (s *Store) HoldersOf(ctx context.Context, provider string, recordIDs []string) ([]Holder, error) {
	if len(recordIDs) == 0 {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, s.t.sql.holdersOf, provider, recordIDs)
	if err != nil {
		return nil, fmt.Errorf("ledger: who holds %d records of %s: %w", len(recordIDs), provider, err)
	}
	holders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Holder])
	if err != nil {
		return nil, fmt.Errorf("ledger: who holds %d records of %s: %w", len(recordIDs), provider, err)
	}
	return holders, nil
}

// StalePending returns up to limit pending operations of provider whose
// first attempt is older than cutoff, after cursor in (first_attempt_at, id)
// order. The partial index operations_pending_stale_idx serves it, so its
// cost follows the pending rows, not the ledger's size. Pass the last row's
// position as the next cursor; fewer than limit rows means the end.
func (s *Store) StalePending(ctx context.Context, provider string, cutoff time.Time, after StaleCursor, limit int) ([]Operation, error) {
	rows, err := s.db.Query(ctx, s.t.sql.stalePending, provider, cutoff, after.position(), after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("stale scan %s: %w", provider, err)
	}
	ops, err := pgx.CollectRows(rows, s.t.scan)
	if err != nil {
		return nil, fmt.Errorf("stale scan %s: %w", provider, err)
	}
	return ops, nil
}

// Settled returns up to limit operations of provider settled (done or
// failed) at or after from and before until, by their updated_at, after
// the cursor (updated_at, id) in that order: what an audit looks at once
// more. The partial index operations_settled_idx serves it, so its cost
// follows the window, not the ledger's history.
func (s *Store) Settled(ctx context.Context, provider string, from, until time.Time, after StaleCursor, limit int) ([]Operation, error) {
	rows, err := s.db.Query(ctx, s.t.sql.settled, provider, from, until, after.position(), after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("settled operations of %s: %w", provider, err)
	}
	ops, err := pgx.CollectRows(rows, s.t.scan)
	if err != nil {
		return nil, fmt.Errorf("settled operations of %s: %w", provider, err)
	}
	return ops, nil
}

// KnownKeys returns which of keys some row of the table holds as its
// op_key, of any provider and status; the unique index on op_key serves it.
func (s *Store) KnownKeys(ctx context.Context, keys []string) (map[string]bool, error) {
	rows, err := s.db.Query(ctx, s.t.sql.knownKeys, keys)
	if err != nil {
		return nil, fmt.Errorf("ledger: which of %d op_keys exist: %w", len(keys), err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("ledger: which of %d op_keys exist: %w", len(keys), err)
	}
	known := make(map[string]bool, len(got))
	for _, k := range got {
		known[k] = true
	}
	return known, nil
}

// CountStalePending counts the pending operations of provider whose first
// attempt is older than cutoff: the operations waiting on it, for a person
// told it is down. The partial index operations_pending_stale_idx serves
// it, as it serves the stale scan.
func (s *Store) CountStalePending(ctx context.Context, provider string, cutoff time.Time) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, s.t.sql.countStale, provider, cutoff).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count stale operations of %s: %w", provider, err)
	}
	return n, nil
}

// CountPending counts provider's pending operations, however old, dated
// or not: what waits on it.
func (s *Store) CountPending(ctx context.Context, provider string) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, s.t.sql.countPending, provider).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count pending operations of %s: %w", provider, err)
	}
	return n, nil
}

// StalePendingQuery is the stale scan's SQL on t, exported so that a test
// can EXPLAIN it: $1 provider, $2 cutoff, $3/$4 the cursor, $5 the limit.
func (t *Table) StalePendingQuery() string { return t.sql.stalePending }

// CompareAndSet moves operation id from one status to another, setting
// provider_record_id when recordID is not empty, if and only if it is still
// in from. It reports whether it moved the row: false means someone else
// moved it first, which callers treat as "nothing left to do". It is how
// sweeper writes the ledger, always inside the transaction that writes the
// rest of the outcome.
func (s *Store) CompareAndSet(ctx context.Context, id int64, from, to Status, recordID string) (bool, error) {
	if !CanTransition(from, to) {
		return false, fmt.Errorf("%w: %s -> %s", ErrIllegalTransition, from, to)
	}
	fromWord, toWord, err := s.t.wordsOf(from, to)
	if err != nil {
		return false, fmt.Errorf("mark operation %d %s: %w", id, to, err)
	}
	tag, err := s.db.Exec(ctx, s.t.sql.compareAndSet, id, fromWord, toWord, recordID)
	if err != nil {
		return false, fmt.Errorf("mark operation %d %s: %w", id, to, mapError(err))
	}
	return tag.RowsAffected() == 1, nil
}

// GetByID returns the operation with the given id, or [ErrNotFound].
func (s *Store) GetByID(ctx context.Context, id int64) (Operation, error) {
	return s.getOne(ctx, s.t.sql.getByID, id, fmt.Sprintf("id %d", id))
}

// GetByIDs returns the operations with the given ids that exist, in no
// particular order: a row a workflow deleted is simply absent.
func (s *Store) GetByIDs(ctx context.Context, ids []int64) ([]Operation, error) {
	rows, err := s.db.Query(ctx, s.t.sql.getByIDs, ids)
	if err != nil {
		return nil, fmt.Errorf("ledger: get %d operations: %w", len(ids), err)
	}
	ops, err := pgx.CollectRows(rows, s.t.scan)
	if err != nil {
		return nil, fmt.Errorf("ledger: get %d operations: %w", len(ids), err)
	}
	return ops, nil
}

// StaleOtherProviders is the stale scan for rows whose provider is none of
// known, or NULL: they cannot be looked up, and must not wait forever
// unseen.
func (s *Store) StaleOtherProviders(ctx context.Context, known []string, cutoff time.Time, after StaleCursor, limit int) ([]Operation, error) {
	rows, err := s.db.Query(ctx, s.t.sql.staleOther, known, cutoff, after.position(), after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("stale scan of unconfigured providers: %w", err)
	}
	ops, err := pgx.CollectRows(rows, s.t.scan)
	if err != nil {
		return nil, fmt.Errorf("stale scan of unconfigured providers: %w", err)
	}
	return ops, nil
}

// MaxClockSkew is how far after the database's now() a workflow may date
// an attempt (its clock running ahead); the ledger refuses later dates on
// insert, and rows written before that rule are swept as invalid.
const MaxClockSkew = 5 * time.Minute

// FutureDated returns up to limit pending operations whose first attempt
// is dated after notBefore (+infinity included) or not dated at all
// (NULL, read as +infinity) — rows the stale scan, which waits for
// first_attempt_at to age, would never reach — after cursor in
// (first_attempt_at, id) order.
func (s *Store) FutureDated(ctx context.Context, notBefore time.Time, after StaleCursor, limit int) ([]Operation, error) {
	rows, err := s.db.Query(ctx, s.t.sql.futureDated, notBefore, after.position(), after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("scan of future-dated operations: %w", err)
	}
	ops, err := pgx.CollectRows(rows, s.t.scan)
	if err != nil {
		return nil, fmt.Errorf("scan of future-dated operations: %w", err)
	}
	return ops, nil
}

// Get returns the operation with the given key, or [ErrNotFound].
func (s *Store) Get(ctx context.Context, opKey string) (Operation, error) {
	return s.getOne(ctx, s.t.sql.getByOpKey, opKey, opKey)
}

// getOne reads the operation query (by id or by op_key) finds for value.
func (s *Store) getOne(ctx context.Context, query string, value any, label string) (Operation, error) {
	rows, err := s.db.Query(ctx, query, value)
	if err != nil {
		return Operation{}, fmt.Errorf("read operation %s: %w", label, err)
	}
	op, err := pgx.CollectExactlyOneRow(rows, s.t.scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return Operation{}, fmt.Errorf("%w: %s", ErrNotFound, label)
	}
	if err != nil {
		return Operation{}, fmt.Errorf("read operation %s: %w", label, err)
	}
	return op, nil
}

// finiteTime reads a timestamp a workflow may have written as ±infinity:
// -infinity (and NULL) become the zero time, +infinity the last instant Go
// formats, so that an odd row is still read — and settled — not an error.
func finiteTime(t pgtype.Timestamptz) time.Time {
	switch {
	case !t.Valid || t.InfinityModifier == pgtype.NegativeInfinity:
		return time.Time{}
	case t.InfinityModifier == pgtype.Infinity:
		return endOfTime
	}
	return t.Time
}

// endOfTime is how a timestamp of +infinity is read: the last instant Go
// formats.
var endOfTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// mapError turns the ledger's refusals into the package's errors, keeping
// the database's message (it names the op_key and what was refused):
// [ErrIllegalTransition] for a move the writer may not make, [ErrRecordHeld]
// for a record another operation holds, [ErrRefused] for the rest of the
// contract. Other errors are returned as they are.
func mapError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.ConstraintName {
	case "operations_status_transition", "operations_provider_record_id_final", "operations_op_key_final",
		"operations_review_by_sweeper":
		return fmt.Errorf("%w: %s", ErrIllegalTransition, pgErr.Message)
	case "operations_done_record_id_check":
		// The database's message names only the constraint.
		return fmt.Errorf("%w: done requires provider_record_id (%s)", ErrIllegalTransition, pgErr.Message)
	case "operations_provider_record_idx", "operations_record_namespace":
		return fmt.Errorf("%w: %s", ErrRecordHeld, pgErr.Detail)
	case "operations_identity_final", "operations_first_attempt_at_final", "operations_first_attempt_at_check",
		"operations_open_ticket", "operations_not_null":
		return fmt.Errorf("%w: %s", ErrRefused, pgErr.Message)
	}
	return err
}

// LookalikesQuery is [Store.Lookalikes]' statement on t, for tests that
// EXPLAIN it: $1 provider, $2 payload hash, $3 the operation left out, $4
// the moment, $5/$6 the window before and after, $7 the recipient key, $8
// phone, $9 the limit.
func (t *Table) LookalikesQuery() string { return t.sql.lookalikes }

// LookalikeLimit is the most operations [Store.Lookalikes] returns; a
// caller given this many cannot know it saw every candidate.
const LookalikeLimit = 1000

// Lookalikes returns the other operations of provider's record namespace
// (provider and every block reaching the same account), pending or in
// review, that carry payloadHash, whose own window — from before ahead of
// their first attempt to after past their last — contains at, and whose
// recipient may be the same: for a phone number (phone true), one whose
// digits end with the last seven of recipient's, or that holds fewer than
// seven digits (it cannot be told apart); otherwise one that contains
// recipient, both lower-cased. That is wider than the exact comparison,
// which the caller makes on what is returned; at most [LookalikeLimit]
// rows. The partial index operations_lookalike_idx serves the query.
func (s *Store) Lookalikes(ctx context.Context, provider, payloadHash string, exceptID int64, at time.Time, before, after time.Duration, recipient string, phone bool) ([]Operation, error) {
	key := strings.TrimSpace(recipient)
	if phone {
		digits := strings.Map(func(r rune) rune {
			if '0' <= r && r <= '9' {
				return r
			}
			return -1
		}, key)
		key = digits[max(0, len(digits)-7):]
	}
	rows, err := s.db.Query(ctx, s.t.sql.lookalikes, provider, payloadHash, exceptID, at, before, after, key, phone, LookalikeLimit)
	if err != nil {
		return nil, fmt.Errorf("operations that look like operation %d: %w", exceptID, err)
	}
	ops, err := pgx.CollectRows(rows, s.t.scan)
	if err != nil {
		return nil, fmt.Errorf("operations that look like operation %d: %w", exceptID, err)
	}
	return ops, nil
}
