// Package ledger is the operations ledger: the table workflows write before
// and after calling an outside provider, its states and their legal moves,
// the payload hash both sides compute, and a store over ledger.operations.
//
// The table's shape is a public contract (see docs/ledger.md, "The ledger contract");
// this package imports no other package of sweeper.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is an operation's state in the ledger.
type Status string

const (
	// StatusPending: the workflow claimed the effect and has not confirmed it.
	StatusPending Status = "pending"
	// StatusDone: confirmed; ProviderRecordID names the provider's record.
	StatusDone Status = "done"
	// StatusReview: sweeper could not prove what happened; a ticket is open.
	StatusReview Status = "review"
	// StatusFailed: confirmed not committed. Only then may the workflow try
	// again, under a new key.
	StatusFailed Status = "failed"
)

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusDone, StatusReview, StatusFailed:
		return true
	}
	return false
}

// Final reports whether no transition leaves s.
func (s Status) Final() bool { return s == StatusDone || s == StatusFailed }

// CanTransition reports whether the ledger allows from → to (invariant I2):
// pending→done|review|failed and review→done|failed. The database trigger
// ledger.operations_guard enforces the same table for every writer.
func CanTransition(from, to Status) bool {
	switch from {
	case StatusPending:
		return to == StatusDone || to == StatusReview || to == StatusFailed
	case StatusReview:
		return to == StatusDone || to == StatusFailed
	}
	return false
}

// MaxOpKeyLength is the longest op_key the ledger accepts, in characters.
const MaxOpKeyLength = 255

// The longest values, in characters, sweeper reads from a row as they are;
// a longer one makes the row invalid ([Operation.Invalid]) rather than
// travel into lookups, evidence, tickets and Slack.
const (
	// MaxProviderLength: a [providers.NAME] block's name is at most 64
	// characters, so a longer provider can never be looked up.
	MaxProviderLength = 64
	// MaxNameLength bounds workflow, action, source_id and
	// provider_record_id: names and ids, which Slack shows cut at 200.
	MaxNameLength = 255
	// MaxRecipientLength is the longest address SMTP carries (a 64-octet
	// local part, "@", a 255-octet domain); phone numbers and customer ids
	// are shorter.
	MaxRecipientLength = 320
)

// Operation is one row of ledger.operations.
type Operation struct {
	ID               int64           `json:"id"`
	OpKey            string          `json:"op_key"`
	Workflow         string          `json:"workflow"`
	Provider         string          `json:"provider"`
	Action           string          `json:"action"`
	SourceID         string          `json:"source_id,omitempty"`
	Recipient        string          `json:"recipient,omitempty"`
	PayloadHash      string          `json:"payload_hash,omitempty"`
	Payload          json.RawMessage `json:"payload,omitempty"`
	Status           Status          `json:"status"`
	Attempts         int             `json:"attempts"`
	FirstAttemptAt   time.Time       `json:"first_attempt_at"`
	LastAttemptAt    time.Time       `json:"last_attempt_at,omitzero"`
	ProviderRecordID string          `json:"provider_record_id,omitempty"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
	// Invalid says, in words and without quoting any value, what makes the
	// row one sweeper cannot look up — a required value NULL or empty, a
	// value longer than sweeper holds, one of the wrong form — and is ""
	// for a row it can. [Store] reads such a row rather than fail the
	// read, so that it becomes its own invalid_operation ticket and the
	// other rows are settled as usual.
	Invalid string `json:"invalid,omitempty"`
}

var (
	// ErrNotFound: no operation has the given key.
	ErrNotFound = errors.New("operation not found")
	// ErrConflict: the key is already claimed for a different effect.
	ErrConflict = errors.New("op_key already claimed with different content")
	// ErrIllegalTransition: the database rejected a status change (I2).
	ErrIllegalTransition = errors.New("illegal status transition")
	// ErrNotPending: a compare-and-set found the row no longer in the
	// expected state. Use errors.As with *StateError for the state found.
	ErrNotPending = errors.New("operation is not in the expected state")
	// ErrRecordHeld: the provider record is already held by another
	// operation of the provider; one record proves at most one operation.
	// Use errors.As with *RecordHeldError for which one, where known.
	ErrRecordHeld = errors.New("provider record already held by another operation")
	// ErrRefused: the database refused a write the ledger contract forbids
	// whoever writes — an identity column changed, first_attempt_at moved
	// after the row left pending or set to a time no attempt was made at,
	// a row deleted while its ticket is open. The message is the
	// database's and says which.
	ErrRefused = errors.New("refused by the ledger contract")
)

// RecordHeldError reports a confirmation with a provider record another
// operation of the same provider already holds. It matches [ErrRecordHeld].
type RecordHeldError struct {
	// OpKey is the operation that was being confirmed; it is still pending.
	OpKey string
	// RecordID is the provider record both name.
	RecordID string
	// Holder is the op_key of the operation holding the record, or "" when
	// it could not be read (the refusal aborted the caller's transaction).
	Holder string
}

func (e *RecordHeldError) Error() string {
	holder := "another operation"
	if e.Holder != "" {
		holder = "operation " + e.Holder
	}
	return fmt.Sprintf("cannot confirm %s: provider record %s already proves %s; one record proves at most one operation: "+
		"leave %s pending, and sweeper will look it up and open a ticket for a person", e.OpKey, e.RecordID, holder, e.OpKey)
}

// Is makes errors.Is(err, ErrRecordHeld) hold.
func (e *RecordHeldError) Is(target error) bool { return target == ErrRecordHeld }

// StateError reports a compare-and-set that found the operation in another
// state than the one it required. It matches [ErrNotPending].
type StateError struct {
	OpKey string
	Want  Status
	Got   Status
}

func (e *StateError) Error() string {
	return fmt.Sprintf("operation %s is %s, not %s", e.OpKey, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrNotPending) hold.
func (e *StateError) Is(target error) bool { return target == ErrNotPending }
