package providers

import (
	"context"
	"time"
)

// Query is all an adapter is given: the operation's natural key. It holds
// no payload to send and no handle that could send one: an adapter can only
// search (DESIGN.md, I1).
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
	// Since and Until bound the search: from a little before the first
	// attempt (clocks disagree) until now.
	Since, Until time.Time
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
}

// Lookup finds the records a provider holds for an operation.
//
// An empty result with a nil error means the provider was searched and holds
// nothing for the query. Any failure must be an error — classified with
// [Transient], [RateLimited], [Permanent] or [ErrUnsupported] — never an
// empty result: "not found" must not stand in for "did not look".
type Lookup interface {
	Lookup(ctx context.Context, q Query) ([]Record, error)
}
