package providers

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Query is all an adapter is given: the operation's natural key. It holds
// no payload to send and no handle that could send one: an adapter can only
// search (docs/architecture.md, I1).
type Query struct {
	// OpKey is the reconciliation key, as carried to the provider in
	// metadata or a reference field.
	OpKey string
	// Recipient is the address, phone number or customer the effect was for.
	Recipient string
	// Action is what was attempted ("send_email", "charge").
	Action string
	// PayloadHash is the ledger's payload hash, for adapters that can filter
	// on it; the decision compares it again regardless.
	PayloadHash string
	// FirstAttemptAt is when the workflow first attempted the effect.
	FirstAttemptAt time.Time
	// Since and Until bound the search, and a record dated outside them is
	// not proof: for an adapter that matches by key, from a little before
	// the first attempt until now; for one that matches by resemblance, the
	// operation's own window (see [Matching]).
	Since, Until time.Time
	// Match says how the adapter ties records to operations, and so how
	// recipients compare. Adapters may ignore it.
	Match Matching
}

// Matching says how an adapter's records are tied to an operation. An
// adapter declares it by implementing [MatchingLookup]; one that does not
// is taken to match by resemblance, the stricter rule.
type Matching struct {
	// ByKey: the provider holds the operation's op_key on each record (in
	// metadata, a reference field) and the adapter selects records by it,
	// so a record names its operation. Otherwise records are found by
	// resemblance — recipient, payload and time — and one could belong to
	// another operation that looks the same.
	ByKey bool
	// Phone: recipients are phone numbers and compare in E.164 form;
	// otherwise they compare after [ledger.NormalizeRecipient].
	Phone bool
	// Margin is how long after an operation's last attempt the provider may
	// date its record (queues, clocks). Zero means [DefaultMargin].
	Margin time.Duration
}

// DefaultMargin is how long after an operation's last attempt a record
// found by resemblance may be dated and still be this attempt's: a send
// that was accepted is dated within seconds; ten minutes allows for queues
// and clocks without reaching the next day's identical reminder.
const DefaultMargin = 10 * time.Minute

// MatchingLookup is implemented by adapters that declare how they match.
type MatchingLookup interface {
	Lookup
	Matching() Matching
}

// Record is one provider record that matched a query.
type Record struct {
	// ID is the provider's record id: what provider_record_id becomes.
	ID string `json:"id"`
	// CreatedAt is when the provider created the record, if it says.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// Recipient as the provider holds it; compared with the ledger's, and
	// masked in evidence.
	Recipient string `json:"recipient,omitempty"`
	// Fields are the record's normalized fields, as the ledger's payload
	// would hold them.
	Fields map[string]any `json:"fields,omitempty"`
	// PayloadHash is the ledger's payload hash computed from Fields (or
	// reported by a provider that stores it). Empty means the record cannot
	// prove its payload, which is never agreement.
	PayloadHash string `json:"payload_hash,omitempty"`
	// Excerpt is a short, redacted extract of the raw record for people.
	Excerpt string `json:"excerpt,omitempty"`
	// State is where the record stands in the provider's own state machine,
	// as the adapter's table of states reads it (docs/adapters.md): empty
	// or [StateEffect] for a record that is the effect, [StateInFlight],
	// [StateFailed] or [StateReversed] for a record of an attempt that is
	// not (yet, or any more) the effect. Only an effect proves (I3).
	State State `json:"state,omitempty"`
	// Status is the provider's own word for the record's state
	// ("undelivered", "requires_capture"), for people; empty when the
	// provider has none.
	Status string `json:"status,omitempty"`
}

// State is where a provider's record stands, in the terms the decision
// uses: every adapter maps its provider's states onto these in one table.
type State string

const (
	// StateEffect: the record is the effect (a message the provider
	// accepted to send, a captured charge). The empty State means the same:
	// an adapter whose provider has no states leaves it empty.
	StateEffect State = "effect"
	// StateInFlight: the effect is still being made at the provider (a
	// scheduled message, an uncaptured authorisation, a bank debit
	// processing). Never done, never not_found: looked up again until it
	// settles, a ticket (in_flight) only when it outlasts in_flight_for.
	StateInFlight State = "in_flight"
	// StateFailed: the provider reports that the attempt failed (a message
	// that never reached the carrier, a cancelled send). Evidence of the
	// attempt, never of the effect: a person decides, sweeper never
	// resends.
	StateFailed State = "failed"
	// StateReversed: the effect happened and the provider reports it undone
	// or contested (a refunded or disputed charge): a person decides.
	StateReversed State = "reversed"
)

// States lists every State an adapter may give, the empty one aside.
var States = []State{StateEffect, StateInFlight, StateFailed, StateReversed}

// Effect reports whether the record is the effect: its State is empty or
// [StateEffect].
func (r Record) Effect() bool { return r.State == "" || r.State == StateEffect }

// Valid reports whether s is a State the decision knows (empty included).
func (s State) Valid() bool { return s == "" || slices.Contains(States, s) }

// Lookup finds the records a provider holds for an operation.
//
// An empty result with a nil error means the provider was searched and holds
// nothing for the query. Any failure must be an error — classified with
// [Transient], [RateLimited], [Permanent] or [ErrUnsupported] — never an
// empty result: "not found" must not stand in for "did not look".
type Lookup interface {
	Lookup(ctx context.Context, q Query) ([]Record, error)
}

// RequireOpKey returns a permanent error of the adapter named name for a
// query without an op_key, nil for one with: an adapter that searches by
// op_key has nothing to search for without one.
func RequireOpKey(name string, q Query) error {
	if q.OpKey == "" {
		return Permanent(fmt.Errorf("%s: the operation has no op_key to search for", name))
	}
	return nil
}

// Window returns the end of q's search window for an adapter named name:
// q.Until, or now for a query without one (a keyed query's Until is "now"
// by the database's clock). A query without a start, or that ends before
// it starts, is a permanent error.
func Window(name string, q Query) (time.Time, error) {
	if q.Since.IsZero() {
		return time.Time{}, Permanent(fmt.Errorf("%s: the query has no start time", name))
	}
	until := q.Until
	if until.IsZero() {
		until = time.Now()
	}
	if until.Before(q.Since) {
		return time.Time{}, Permanent(fmt.Errorf("%s: the query ends before it starts", name))
	}
	return until, nil
}
