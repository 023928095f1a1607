// Package review decides what a lookup proves, and keeps the review tickets
// for what it does not: one per operation, with one owner, a deadline, an
// immutable evidence snapshot and an append-only audit trail.
package review

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Reason says why an operation went to review.
type Reason string

const (
	// ReasonNotFound: the provider was searched and holds no record. Not
	// proof of absence (I3): the record may be late, or filed elsewhere.
	ReasonNotFound Reason = "not_found"
	// ReasonMultipleMatches: several records match; every id is in the
	// evidence.
	ReasonMultipleMatches Reason = "multiple_matches"
	// ReasonPayloadMismatch: one record, but its payload or recipient
	// differs.
	ReasonPayloadMismatch Reason = "payload_mismatch"
	// ReasonLookupFailed: errors or timeouts until the lookup budget ran out,
	// or an error retrying cannot fix.
	ReasonLookupFailed Reason = "lookup_failed"
	// ReasonLookupUnsupported: the provider has no way to search.
	ReasonLookupUnsupported Reason = "lookup_unsupported"
	// ReasonInvalidOperation: the row cannot be looked up (unknown provider,
	// missing key fields).
	ReasonInvalidOperation Reason = "invalid_operation"
)

// Reasons lists every reason.
var Reasons = []Reason{ReasonNotFound, ReasonMultipleMatches, ReasonPayloadMismatch,
	ReasonLookupFailed, ReasonLookupUnsupported, ReasonInvalidOperation}

// Describe says what a reason means, in plain words for people.
func (r Reason) Describe() string {
	switch r {
	case ReasonNotFound:
		return "the provider holds no matching record (which does not prove nothing was sent)"
	case ReasonMultipleMatches:
		return "the provider holds several matching records"
	case ReasonPayloadMismatch:
		return "the provider's record differs from what the workflow meant to send"
	case ReasonLookupFailed:
		return "the provider could not be asked within the lookup budget"
	case ReasonLookupUnsupported:
		return "the provider offers no way to search"
	case ReasonInvalidOperation:
		return "the ledger row cannot be looked up"
	}
	return string(r)
}

// Outcome is the result of a lookup: what the provider answered, or why it
// did not. Build it with [Answered], [Failed], [Unsupported] or [Invalid];
// the zero value is a lookup that never ran, which is never "zero records".
type Outcome struct {
	answered bool
	records  []providers.Record
	failure  Reason // lookup_failed, lookup_unsupported or invalid_operation
	problem  string // why, for people
}

// Answered is a search the provider completed, holding records (possibly
// none).
func Answered(records []providers.Record) Outcome {
	return Outcome{answered: true, records: records}
}

// Failed is a lookup that errored or timed out past the budget.
func Failed(problem string) Outcome {
	return Outcome{failure: ReasonLookupFailed, problem: problem}
}

// Unsupported is a provider that cannot search.
func Unsupported(problem string) Outcome {
	return Outcome{failure: ReasonLookupUnsupported, problem: problem}
}

// Invalid is a row that cannot be looked up.
func Invalid(problem string) Outcome {
	return Outcome{failure: ReasonInvalidOperation, problem: problem}
}

// Records returns what the provider answered (nil unless Answered).
func (o Outcome) Records() []providers.Record { return o.records }

// Decision is what an outcome proves about an operation.
type Decision struct {
	// Done is true when exactly one agreeing record proves the effect.
	Done bool
	// ProviderRecordID is that record's id, when Done.
	ProviderRecordID string
	// Reason is why the operation goes to review, when not Done.
	Reason Reason
	// Detail explains the decision for people: which ids, which fields.
	Detail string
	// RecordIDs lists every record the decision considered.
	RecordIDs []string
	// DifferingFields names what disagreed, for payload_mismatch.
	DifferingFields []string
}

// Decide is the whole rule, and pure: exactly one record whose payload hash
// agrees — and whose recipient agrees when both sides have one — is done.
// Anything else goes to review with its reason; in particular a lookup that
// did not run or did not answer is never counted as zero records (I3).
func Decide(op ledger.Operation, out Outcome) Decision {
	if out.failure != "" {
		return Decision{Reason: out.failure, Detail: out.problem}
	}
	if !out.answered {
		return Decision{Reason: ReasonLookupFailed, Detail: "the lookup did not run"}
	}
	if problem := Lookable(op); problem != "" {
		return Decision{Reason: ReasonInvalidOperation, Detail: problem}
	}
	ids := make([]string, len(out.records))
	for i, r := range out.records {
		ids[i] = r.ID
	}
	switch len(out.records) {
	case 0:
		return Decision{Reason: ReasonNotFound, Detail: "the provider was searched and returned no record"}
	case 1:
	default:
		return Decision{Reason: ReasonMultipleMatches, RecordIDs: ids,
			Detail: fmt.Sprintf("%d records: %s", len(ids), strings.Join(ids, ", "))}
	}
	rec := out.records[0]
	differ := differingFields(op, rec)
	if len(differ) > 0 {
		return Decision{Reason: ReasonPayloadMismatch, RecordIDs: ids, DifferingFields: differ,
			Detail: fmt.Sprintf("record %s differs: %s", rec.ID, strings.Join(differ, ", "))}
	}
	return Decision{Done: true, ProviderRecordID: rec.ID, RecordIDs: ids,
		Detail: fmt.Sprintf("record %s matches payload hash and recipient", rec.ID)}
}

// Lookable returns why op cannot be looked up, or "" when it can.
func Lookable(op ledger.Operation) string {
	var missing []string
	if op.PayloadHash == "" {
		missing = append(missing, "payload_hash")
	}
	if op.Action == "" {
		missing = append(missing, "action")
	}
	if len(missing) > 0 {
		return "missing " + strings.Join(missing, ", ")
	}
	return ""
}

// differingFields names what disagrees between the row and the record: the
// payload hash (with the individual fields, when both sides carry them) and
// the recipient, when both sides have one.
func differingFields(op ledger.Operation, rec providers.Record) []string {
	var differ []string
	if rec.PayloadHash != op.PayloadHash {
		fields := differingPayloadFields(op, rec)
		if len(fields) == 0 {
			fields = []string{"payload_hash"}
			if rec.PayloadHash == "" {
				fields = []string{"payload_hash (the record carries none)"}
			}
		}
		differ = append(differ, fields...)
	}
	if op.Recipient != "" && rec.Recipient != "" && !sameRecipient(op.Recipient, rec.Recipient) {
		differ = append(differ, "recipient")
	}
	if op.ProviderRecordID != "" && op.ProviderRecordID != rec.ID {
		// The row already names another record (a workflow wrote it while
		// pending); the ledger will not change it, and a person must look.
		differ = append(differ, "provider_record_id")
	}
	return differ
}

// sameRecipient compares addresses the way providers echo them back:
// surrounding space and letter case do not count.
func sameRecipient(a, b string) bool {
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// differingPayloadFields compares the row's payload with the record's
// fields, key by key, through the canonical form.
func differingPayloadFields(op ledger.Operation, rec providers.Record) []string {
	if len(op.Payload) == 0 || rec.Fields == nil {
		return nil
	}
	want, err := payloadFields(op.Payload)
	if err != nil {
		return nil
	}
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range rec.Fields {
		keys[k] = true
	}
	var differ []string
	for k := range keys {
		a, aok := want[k]
		b, bok := canonicalValue(rec.Fields[k])
		if _, present := rec.Fields[k]; !present {
			bok = false
		}
		if aok != bok || a != b {
			differ = append(differ, "payload."+k)
		}
	}
	slices.Sort(differ)
	return differ
}

func payloadFields(payload []byte) (map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		c, err := ledger.Canonicalize(v)
		if err != nil {
			return nil, err
		}
		out[k] = string(c)
	}
	return out, nil
}

func canonicalValue(v any) (string, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	c, err := ledger.Canonicalize(b)
	return string(c), err == nil
}
