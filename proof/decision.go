package proof

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
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
	// ReasonAmbiguousOwner: one agreeing record, found by resemblance
	// (recipient, payload, time), that another unsettled operation could
	// own as well; every candidate is in the evidence.
	ReasonAmbiguousOwner Reason = "ambiguous_owner"
	// ReasonLookupFailed: errors or timeouts until the lookup budget ran out,
	// or an error retrying cannot fix.
	ReasonLookupFailed Reason = "lookup_failed"
	// ReasonLookupUnsupported: the provider has no way to search.
	ReasonLookupUnsupported Reason = "lookup_unsupported"
	// ReasonInvalidOperation: the row cannot be looked up (unknown provider,
	// missing key fields).
	ReasonInvalidOperation Reason = "invalid_operation"
	// ReasonInFlight: the provider's record says the effect is still being
	// made (a scheduled message, an uncaptured authorisation, a payment
	// processing) and it stayed so past the provider's in_flight_for.
	ReasonInFlight Reason = "in_flight"
	// ReasonProviderFailed: the provider holds a record of the attempt and
	// says it failed (a message that never reached the carrier, a cancelled
	// send). A person decides; sweeper never resends.
	ReasonProviderFailed Reason = "provider_failed"
	// ReasonProviderReversed: the effect happened and the provider says it
	// was undone or contested since (a refunded or disputed charge).
	ReasonProviderReversed Reason = "provider_reversed"
	// ReasonDuplicateEffect: an audit of a done operation found more than
	// one record of its effect at the provider (a retry that repeated a
	// call which had succeeded); every record, the one the ledger holds and
	// each one's state (a refunded one shown as reversed) are in the
	// evidence. The ledger row is not changed.
	ReasonDuplicateEffect Reason = "duplicate_effect"
	// ReasonEffectAfterFailed: an audit of a failed operation found its
	// effect at the provider: the workflow believes it did not happen and
	// may have done it again under another key. The ledger row is not
	// changed.
	ReasonEffectAfterFailed Reason = "effect_after_failed"
)

// Reasons lists every reason.
var Reasons = []Reason{ReasonNotFound, ReasonMultipleMatches, ReasonPayloadMismatch,
	ReasonAmbiguousOwner, ReasonLookupFailed, ReasonLookupUnsupported, ReasonInvalidOperation,
	ReasonInFlight, ReasonProviderFailed, ReasonProviderReversed,
	ReasonDuplicateEffect, ReasonEffectAfterFailed}

// Audit reports whether tickets of reason r are the audit's findings on a
// settled operation ([Audit]): their resolution records a person's verdict
// and never changes the ledger row.
func (r Reason) Audit() bool {
	return r == ReasonDuplicateEffect || r == ReasonEffectAfterFailed
}

// Relooks reports whether tickets of reason r are looked up again on a
// schedule while open: not_found (a record indexed late), lookup_failed
// (a provider back from an outage) and in_flight (an effect the provider
// was still making) can settle by themselves; the others need a person.
func (r Reason) Relooks() bool {
	return r == ReasonNotFound || r == ReasonLookupFailed || r == ReasonInFlight
}

// Describe says what a reason means, in plain words for people.
func (r Reason) Describe() string {
	switch r {
	case ReasonNotFound:
		return "the provider holds no matching record (which does not prove nothing was sent)"
	case ReasonMultipleMatches:
		return "the provider holds several matching records"
	case ReasonPayloadMismatch:
		return "the provider's record differs from what the workflow meant to send"
	case ReasonAmbiguousOwner:
		return "the provider's record could belong to another operation that looks the same"
	case ReasonLookupFailed:
		return "the provider could not be asked within the lookup budget"
	case ReasonLookupUnsupported:
		return "the provider offers no way to search"
	case ReasonInvalidOperation:
		return "the ledger row cannot be looked up"
	case ReasonInFlight:
		return "the provider is still making the effect (scheduled, authorised, processing), longer than expected"
	case ReasonProviderFailed:
		return "the provider holds the attempt and reports that it failed (which is not proof that nothing reached the recipient)"
	case ReasonProviderReversed:
		return "the provider reports the effect undone or contested (refunded, disputed)"
	case ReasonDuplicateEffect:
		return "an audit after the operation was done found its effect more than once at the provider (the ledger row is unchanged)"
	case ReasonEffectAfterFailed:
		return "an audit found the effect at the provider although the workflow marked the operation failed (the ledger row is unchanged)"
	}
	return string(r)
}

// Outcome is the result of a lookup: what the provider answered, or why it
// did not. Build it with [Answered], [Failed], [Unsupported] or [Invalid];
// the zero value is a lookup that never ran, which is never "zero records".
type Outcome struct {
	answered bool
	query    providers.Query
	records  []providers.Record
	failure  Reason // lookup_failed, lookup_unsupported or invalid_operation
	problem  string // why, for people
}

// Answered is a search the provider completed for q, holding records
// (possibly none). q is what the records are judged against: the
// operation's identity the lookup was made for, the time window a record
// must be dated in, and how recipients compare.
func Answered(q providers.Query, records []providers.Record) Outcome {
	return Outcome{answered: true, query: q, records: records}
}

// Failed is a lookup that errored or timed out past the budget.
func Failed(problem string) Outcome {
	return Outcome{failure: ReasonLookupFailed, problem: StorableText(problem)}
}

// Unsupported is a provider that cannot search.
func Unsupported(problem string) Outcome {
	return Outcome{failure: ReasonLookupUnsupported, problem: StorableText(problem)}
}

// Invalid is a row that cannot be looked up.
func Invalid(problem string) Outcome {
	return Outcome{failure: ReasonInvalidOperation, problem: problem}
}

// Records returns what the provider answered (nil unless Answered).
func (o Outcome) Records() []providers.Record { return o.records }

// Searched reports whether the provider completed a search (Answered).
func (o Outcome) Searched() bool { return o.answered }

// Query returns the query an answered outcome was given for.
func (o Outcome) Query() providers.Query { return o.query }

// Decision is what an outcome proves about an operation.
type Decision struct {
	// Done is true when exactly one agreeing record proves the effect.
	Done bool `json:"done"`
	// ProviderRecordID is that record's id, when Done.
	ProviderRecordID string `json:"provider_record_id,omitempty"`
	// Reason is why the operation goes to review, when not Done.
	Reason Reason `json:"reason,omitempty"`
	// Detail explains the decision for people: which ids, which fields.
	Detail string `json:"detail,omitempty"`
	// RecordIDs lists every record the decision considered.
	RecordIDs []string `json:"record_ids,omitempty"`
	// DifferingFields names what disagreed, for payload_mismatch.
	DifferingFields []string `json:"differing_fields,omitempty"`
	// Candidates are the op_keys of the other operations that could own
	// the record, for ambiguous_owner.
	Candidates []string `json:"candidates,omitempty"`
}

// Decide is the whole rule, and pure. Only a record that is the effect
// (its [providers.Record.Effect]: the adapter's table of its provider's
// states says so) can prove anything; a record of an attempt that failed,
// is still in flight or was reversed is evidence, never proof. Proof is
// exactly one effect record, with no other record of the operation still
// in flight or reversed, that
//
//   - was found for this operation as it is: the lookup's op_key, action,
//     recipient and payload hash are the row's (a row changed since its
//     lookup is looked up again, never settled on the old answer);
//   - is dated inside the lookup's window [Since, Until] (a record from
//     last year, or from the future, is not this attempt's);
//   - carries the row's payload hash;
//   - carries the row's recipient after the one documented normalization
//     ([ledger.SameRecipient]; E.164 for phone providers) — for a provider
//     that matches by key the record may carry none, since its op_key ties
//     it to the row; for one that matches by resemblance it must;
//   - and is not contradicted by a different record id already on the row.
//
// Records of failed attempts beside the one effect do not stand in its way:
// they made no effect. Without an effect record, the answer's other records
// say why: in_flight (the effect may still come), provider_reversed or
// provider_failed; with none at all, not_found.
//
// Anything else goes to review with its reason; in particular a lookup that
// did not run or did not answer is never counted as zero records (I3).
// Decide cannot see the rest of the ledger: [Prove] adds the rule that one
// record proves one operation.
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
	if !LookedUpAs(op, out.query) {
		return Decision{Reason: ReasonLookupFailed, Detail: "the operation changed after its lookup; the answer is for what it was"}
	}
	ids := make([]string, len(out.records))
	for i, r := range out.records {
		ids[i] = r.ID
	}
	byState := StatesOf(out.records)
	effects := byState[providers.StateEffect]
	switch {
	case len(out.records) == 0:
		return Decision{Reason: ReasonNotFound, Detail: "the provider was searched and returned no record"}
	case len(effects) > 1:
		return Decision{Reason: ReasonMultipleMatches, RecordIDs: ids,
			Detail: fmt.Sprintf("%d records: %s", len(ids), strings.Join(ids, ", "))}
	case len(byState[providers.StateInFlight]) > 0:
		return Decision{Reason: ReasonInFlight, RecordIDs: ids,
			Detail: "the provider is still making the effect: " + stateDetail(out.records)}
	case len(byState[providers.StateReversed]) > 0:
		return Decision{Reason: ReasonProviderReversed, RecordIDs: ids,
			Detail: "the provider reports the effect undone or contested: " + stateDetail(out.records)}
	case len(effects) == 0:
		return Decision{Reason: ReasonProviderFailed, RecordIDs: ids,
			Detail: "the provider holds the attempt and reports that it failed: " + stateDetail(out.records)}
	}
	rec := effects[0]
	differ := differingFields(op, out.query, rec)
	if len(differ) > 0 {
		return Decision{Reason: ReasonPayloadMismatch, RecordIDs: ids, DifferingFields: differ,
			Detail: fmt.Sprintf("record %s differs: %s", rec.ID, strings.Join(differ, ", "))}
	}
	detail := fmt.Sprintf("record %s matches payload hash and recipient, dated inside the lookup window", rec.ID)
	if len(out.records) > 1 {
		detail += "; the other records are failed attempts: " + stateDetail(out.records)
	}
	return Decision{Done: true, ProviderRecordID: rec.ID, RecordIDs: ids, Detail: detail}
}

// StatesOf sorts records by the state the decision reads: the empty state
// counts as [providers.StateEffect].
func StatesOf(records []providers.Record) map[providers.State][]providers.Record {
	out := map[providers.State][]providers.Record{}
	for _, r := range records {
		s := r.State
		if r.Effect() {
			s = providers.StateEffect
		}
		out[s] = append(out[s], r)
	}
	return out
}

// InFlight reports whether an answer holding records would be decided
// in_flight: the effect may still come, so it is asked again rather than
// decided, until the provider's in_flight_for has passed.
func InFlight(records []providers.Record) bool {
	byState := StatesOf(records)
	return len(byState[providers.StateInFlight]) > 0 && len(byState[providers.StateEffect]) <= 1
}

// stateDetail lists each record's id with its state and the provider's
// own word for it, for people.
func stateDetail(records []providers.Record) string {
	parts := make([]string, len(records))
	for i, r := range records {
		state := r.State
		if r.Effect() {
			state = providers.StateEffect
		}
		parts[i] = fmt.Sprintf("%s %s", r.ID, state)
		if r.Status != "" && r.Status != string(state) {
			parts[i] += " (" + safetext.Truncate(r.Status, 40) + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// LookedUpAs reports whether q was made for op as it is now: the same
// op_key, action, recipient and payload hash. The ledger refuses changes
// to these columns; this is the check that does not rely on it.
func LookedUpAs(op ledger.Operation, q providers.Query) bool {
	return q.OpKey == op.OpKey && q.Action == op.Action && q.Recipient == op.Recipient && q.PayloadHash == op.PayloadHash
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
// payload hash (with the individual fields, when both sides carry them),
// the record's date against the lookup window, the recipient, and a record
// id the row already names.
func differingFields(op ledger.Operation, q providers.Query, rec providers.Record) []string {
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
	switch {
	case rec.CreatedAt.IsZero():
		differ = append(differ, "created_at (the record carries none)")
	case q.Until.IsZero() || rec.CreatedAt.Before(q.Since) || rec.CreatedAt.After(q.Until):
		differ = append(differ, fmt.Sprintf("created_at (%s is outside the lookup window %s – %s)",
			rec.CreatedAt.UTC().Format(time.RFC3339), q.Since.UTC().Format(time.RFC3339), q.Until.UTC().Format(time.RFC3339)))
	}
	switch {
	case op.Recipient == "":
	case rec.Recipient == "" && !q.Match.ByKey:
		differ = append(differ, "recipient (the record carries none)")
	case rec.Recipient != "" && !sameRecipient(q.Match, op.Recipient, rec.Recipient):
		differ = append(differ, "recipient")
	}
	if op.ProviderRecordID != "" && op.ProviderRecordID != rec.ID {
		// The row already names another record (a workflow wrote it while
		// pending); the ledger will not change it, and a person must look.
		differ = append(differ, "provider_record_id")
	}
	return differ
}

// sameRecipient compares the row's recipient with the record's: phone
// numbers in E.164 (a number that does not parse agrees with nothing),
// anything else after [ledger.NormalizeRecipient] — never Unicode case
// folding, which would take different mailboxes for one.
func sameRecipient(m providers.Matching, a, b string) bool {
	if m.Phone {
		pa, errA := ledger.NormalizePhone(a)
		pb, errB := ledger.NormalizePhone(b)
		return errA == nil && errB == nil && pa == pb
	}
	return ledger.SameRecipient(a, b)
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
