package proof_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

// hashOf is the ledger's payload hash of a JSON document.
func hashOf(t *testing.T, doc string) string {
	t.Helper()
	h, err := ledger.PayloadHash([]byte(doc))
	if err != nil {
		t.Fatalf("PayloadHash(%s): %v", doc, err)
	}
	return h
}

// decisionOp is an operation as a workflow would have claimed it, with
// payload (a JSON object) and its hash.
func decisionOp(t *testing.T, recipient, payload string) ledger.Operation {
	t.Helper()
	return ledger.Operation{
		ID:          7,
		OpKey:       "invoice-42",
		Workflow:    "billing",
		Provider:    "payments",
		Action:      "charge",
		Recipient:   recipient,
		PayloadHash: hashOf(t, payload),
		Payload:     json.RawMessage(payload),
		Status:      ledger.StatusPending,
		Attempts:    1,
		// An hour before decideNow: a stale operation.
		FirstAttemptAt: decideNow.Add(-time.Hour),
		LastAttemptAt:  decideNow.Add(-time.Hour),
	}
}

// inState is r as the provider reports it in state, in its own word.
func inState(r providers.Record, state providers.State, status string) providers.Record {
	r.State, r.Status = state, status
	return r
}

// decideNow is when the decision tests look operations up; at is when the
// provider dated its record: a minute after the first attempt.
var (
	decideNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at        = decideNow.Add(-time.Hour + time.Minute)
)

// answered is the provider's answer to the keyed query made for op at
// decideNow.
func answered(op ledger.Operation, records []providers.Record) proof.Outcome {
	return proof.Answered(proof.SearchFor(op, providers.Matching{ByKey: true}, decideNow), records)
}

func TestDecide(t *testing.T) {
	t.Parallel()

	const (
		recipient = "jane.doe@example.com"
		payload   = `{"amount":1299,"currency":"usd","memo":"March"}`
	)
	op := decisionOp(t, recipient, payload)
	agreeing := func(id string) providers.Record {
		return providers.Record{ID: id, CreatedAt: at, Recipient: recipient, PayloadHash: op.PayloadHash,
			Fields: map[string]any{"amount": 1299, "currency": "usd", "memo": "March"}}
	}
	// withFields is a record carrying fields and the hash computed from them,
	// as an adapter that normalizes the provider's record would build it.
	withFields := func(id string, fields map[string]any) providers.Record {
		h, err := ledger.PayloadHashOf(fields)
		if err != nil {
			t.Fatal(err)
		}
		return providers.Record{ID: id, CreatedAt: at, Recipient: recipient, PayloadHash: h, Fields: fields}
	}
	otherHash := hashOf(t, `{"something":"else"}`)

	noHash := op
	noHash.PayloadHash = ""
	noHash.Payload = nil
	noRecipient := op
	noRecipient.Recipient = ""
	// The same amount written 1.0 in the ledger and 1 by the provider.
	decimalOp := decisionOp(t, recipient, `{"amount":1.0,"currency":"usd"}`)
	// Equal fields, but the record's hash was computed from something else
	// (a provider-side field sweeper does not see): no payload key differs,
	// so the hash itself is named.
	sameFieldsOp := decisionOp(t, recipient, `{"amount":12.50,"note":"café"}`)
	kateOp := decisionOp(t, "kate@example.com", payload)
	samOp := decisionOp(t, "sam@example.com", payload)
	changedOp := op
	changedOp.PayloadHash = otherHash
	phoneOp := decisionOp(t, "+1 (555) 010-0002", `{"body":"Your code is 1234"}`)
	phone := providers.Matching{Phone: true}
	// {"coupon":null} and {} are different payloads, with different hashes.
	nullOp := decisionOp(t, recipient, `{"amount":1299,"coupon":null}`)

	tests := []struct {
		desc string
		op   ledger.Operation
		out  proof.Outcome
		want proof.Decision
		// detailHas are substrings Detail must contain.
		detailHas []string
	}{
		{
			desc: "exactly one agreeing record is done with its id",
			op:   op,
			out:  answered(op, []providers.Record{agreeing("ch_1")}),
			want: proof.Decision{Done: true, ProviderRecordID: "ch_1", RecordIDs: []string{"ch_1"}},
		},
		{
			desc: "one agreeing record without fields is done",
			op:   op,
			out:  answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: recipient, PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Done: true, ProviderRecordID: "ch_1", RecordIDs: []string{"ch_1"}},
		},
		{
			desc: "recipient differing only by case and surrounding space agrees",
			op:   op,
			out: answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: "  Jane.DOE@Example.COM\t",
				PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Done: true, ProviderRecordID: "ch_1", RecordIDs: []string{"ch_1"}},
		},
		{
			desc: "recipient empty on the record is not compared",
			op:   op,
			out:  answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Done: true, ProviderRecordID: "ch_1", RecordIDs: []string{"ch_1"}},
		},
		{
			desc: "recipient empty on the operation is not compared",
			op:   noRecipient,
			out:  answered(noRecipient, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: "someone.else@example.com", PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Done: true, ProviderRecordID: "ch_1", RecordIDs: []string{"ch_1"}},
		},
		{
			desc:      "zero records is not_found",
			op:        op,
			out:       answered(op, nil),
			want:      proof.Decision{Reason: proof.ReasonNotFound, RecordIDs: []string{}},
			detailHas: []string{"no record"},
		},
		{
			desc: "an empty non-nil answer is not_found",
			op:   op,
			out:  answered(op, []providers.Record{}),
			want: proof.Decision{Reason: proof.ReasonNotFound, RecordIDs: []string{}},
		},
		{
			desc:      "two agreeing records are multiple_matches",
			op:        op,
			out:       answered(op, []providers.Record{agreeing("ch_1"), agreeing("ch_2")}),
			want:      proof.Decision{Reason: proof.ReasonMultipleMatches, RecordIDs: []string{"ch_1", "ch_2"}},
			detailHas: []string{"ch_1", "ch_2"},
		},
		{
			desc: "several records, agreeing or not, are multiple_matches with every id",
			op:   op,
			out: answered(op, []providers.Record{agreeing("ch_a"), {ID: "ch_b", CreatedAt: at, PayloadHash: otherHash},
				{ID: "ch_c"}, agreeing("ch_d")}),
			want: proof.Decision{Reason: proof.ReasonMultipleMatches,
				RecordIDs: []string{"ch_a", "ch_b", "ch_c", "ch_d"}},
			detailHas: []string{"4 records", "ch_a", "ch_b", "ch_c", "ch_d"},
		},
		{
			desc: "another payload hash without fields names the hash",
			op:   op,
			out:  answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: recipient, PayloadHash: otherHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload_hash"}},
			detailHas: []string{"ch_1", "payload_hash"},
		},
		{
			desc: "a differing amount is named",
			op:   op,
			out: answered(op, []providers.Record{withFields("ch_1",
				map[string]any{"amount": 1399, "currency": "usd", "memo": "March"})}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.amount"}},
			detailHas: []string{"ch_1", "payload.amount"},
		},
		{
			desc: "a key missing from the record is named",
			op:   op,
			out: answered(op, []providers.Record{withFields("ch_1",
				map[string]any{"amount": 1299, "memo": "March"})}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.currency"}},
		},
		{
			desc: "a key present as null on the record is not a missing key, and still differs",
			op:   op,
			out: answered(op, []providers.Record{withFields("ch_1",
				map[string]any{"amount": 1299, "currency": nil, "memo": "March"})}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.currency"}},
		},
		{
			desc: "a null in the payload is not a key the record lacks",
			op:   nullOp,
			out: answered(nullOp, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: recipient, PayloadHash: otherHash,
				Fields: map[string]any{"amount": 1299}}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.coupon"}},
		},
		{
			desc: "a key only the record has is named",
			op:   op,
			out: answered(op, []providers.Record{withFields("ch_1",
				map[string]any{"amount": 1299, "currency": "usd", "memo": "March", "tip": 100})}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.tip"}},
		},
		{
			desc: "several differing keys are named, sorted",
			op:   op,
			out: answered(op, []providers.Record{withFields("ch_1",
				map[string]any{"memo": "April", "amount": 1, "currency": "usd"})}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.amount", "payload.memo"}},
		},
		{
			desc: "1.0 and 1 are the same value: only the currency differs",
			op:   decimalOp,
			out: answered(decimalOp, []providers.Record{withFields("ch_1",
				map[string]any{"amount": 1, "currency": "eur"})}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.currency"}},
		},
		{
			desc: "equal values written differently differ in no key, so the hash is named",
			op:   sameFieldsOp,
			out: answered(sameFieldsOp, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: recipient, PayloadHash: otherHash,
				Fields: map[string]any{"amount": 12.5, "note": "cafe\u0301"}}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload_hash"}},
		},
		{
			desc: "a record with no payload hash is a mismatch, never agreement",
			op:   op,
			out:  answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: recipient}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload_hash (the record carries none)"}},
		},
		{
			desc: "a record with no payload hash but equal fields is still a mismatch",
			op:   op,
			out: answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: recipient,
				Fields: map[string]any{"amount": 1299, "currency": "usd", "memo": "March"}}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload_hash (the record carries none)"}},
		},
		{
			desc: "a differing recipient is named",
			op:   op,
			out:  answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: "john.doe@example.com", PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"recipient"}},
			detailHas: []string{"ch_1", "recipient"},
		},
		{
			desc: "payload and recipient both differing are both named",
			op:   op,
			out: answered(op, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: "+15550100777", PayloadHash: otherHash,
				Fields: map[string]any{"amount": 1299, "currency": "gbp", "memo": "March"}}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"payload.currency", "recipient"}},
		},
		{
			desc: "a record dated years before the first attempt is not this attempt's",
			op:   op,
			out: answered(op, []providers.Record{{ID: "ch_1", CreatedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
				Recipient: recipient, PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"created_at (2020-01-01T00:00:00Z is outside the lookup window 2026-11-30T10:45:00Z – 2026-11-30T12:00:00Z)"}},
		},
		{
			desc: "a record dated in the future is not proof",
			op:   op,
			out: answered(op, []providers.Record{{ID: "ch_1", CreatedAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC),
				Recipient: recipient, PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"created_at (2099-01-01T00:00:00Z is outside the lookup window 2026-11-30T10:45:00Z – 2026-11-30T12:00:00Z)"}},
		},
		{
			desc: "a record without a date cannot be shown inside the window",
			op:   op,
			out:  answered(op, []providers.Record{{ID: "ch_1", Recipient: recipient, PayloadHash: op.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"created_at (the record carries none)"}},
		},
		{
			desc: "KELVIN SIGN is not k: another mailbox",
			op:   kateOp,
			out: answered(kateOp, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: "\u212Aate@example.com",
				PayloadHash: kateOp.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"recipient"}},
		},
		{
			desc: "LONG S is not s: another mailbox",
			op:   samOp,
			out: answered(samOp, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: "\u017Fam@example.com",
				PayloadHash: samOp.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"ch_1"},
				DifferingFields: []string{"recipient"}},
		},
		{
			desc:      "an answer for the row as it was before a workflow changed it is not proof",
			op:        changedOp,
			out:       answered(op, []providers.Record{agreeing("ch_1")}),
			want:      proof.Decision{Reason: proof.ReasonLookupFailed},
			detailHas: []string{"changed after its lookup"},
		},
		{
			desc: "phone numbers compare in E.164 for a phone provider",
			op:   phoneOp,
			out: proof.Answered(proof.SearchFor(phoneOp, phone, decideNow), []providers.Record{{ID: "SM1", CreatedAt: at,
				Recipient: "+15550100002", PayloadHash: phoneOp.PayloadHash}}),
			want: proof.Decision{Done: true, ProviderRecordID: "SM1", RecordIDs: []string{"SM1"}},
		},
		{
			desc: "another phone number differs",
			op:   phoneOp,
			out: proof.Answered(proof.SearchFor(phoneOp, phone, decideNow), []providers.Record{{ID: "SM1", CreatedAt: at,
				Recipient: "+15550100003", PayloadHash: phoneOp.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"SM1"},
				DifferingFields: []string{"recipient"}},
		},
		{
			desc: "a record found by resemblance must carry the recipient",
			op:   phoneOp,
			out: proof.Answered(proof.SearchFor(phoneOp, phone, decideNow), []providers.Record{{ID: "SM1", CreatedAt: at,
				PayloadHash: phoneOp.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"SM1"},
				DifferingFields: []string{"recipient (the record carries none)"}},
		},
		{
			desc: "a record found by resemblance after the operation's own window is another send's",
			op:   phoneOp,
			out: proof.Answered(proof.SearchFor(phoneOp, phone, decideNow), []providers.Record{{ID: "SM1",
				CreatedAt: decideNow.Add(-time.Minute), Recipient: "+15550100002", PayloadHash: phoneOp.PayloadHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"SM1"},
				DifferingFields: []string{"created_at (2026-11-30T11:59:00Z is outside the lookup window 2026-11-30T10:58:00Z – 2026-11-30T11:10:00Z)"}},
		},
		{
			desc:      "a failed lookup is lookup_failed",
			op:        op,
			out:       proof.Failed("3 attempt(s) failed; last: HTTP 503"),
			want:      proof.Decision{Reason: proof.ReasonLookupFailed},
			detailHas: []string{"HTTP 503"},
		},
		{
			desc:      "an unsupported lookup is lookup_unsupported",
			op:        op,
			out:       proof.Unsupported("no search endpoint"),
			want:      proof.Decision{Reason: proof.ReasonLookupUnsupported},
			detailHas: []string{"no search endpoint"},
		},
		{
			desc:      "an invalid operation is invalid_operation",
			op:        op,
			out:       proof.Invalid("unknown provider payments"),
			want:      proof.Decision{Reason: proof.ReasonInvalidOperation},
			detailHas: []string{"unknown provider"},
		},
		{
			desc:      "a lookup that never ran is lookup_failed, not not_found",
			op:        op,
			out:       proof.Outcome{},
			want:      proof.Decision{Reason: proof.ReasonLookupFailed},
			detailHas: []string{"did not run"},
		},
		{
			desc:      "an answer for an operation without payload_hash is invalid_operation",
			op:        noHash,
			out:       answered(noHash, []providers.Record{{ID: "ch_1", CreatedAt: at, Recipient: recipient}}),
			want:      proof.Decision{Reason: proof.ReasonInvalidOperation},
			detailHas: []string{"payload_hash"},
		},
		{
			desc: "the one record in the state 'effect' is done",
			op:   op,
			out:  answered(op, []providers.Record{inState(agreeing("ch_1"), providers.StateEffect, "succeeded")}),
			want: proof.Decision{Done: true, ProviderRecordID: "ch_1", RecordIDs: []string{"ch_1"}},
		},
		{
			desc:      "one agreeing record the provider reports failed is provider_failed, never done",
			op:        op,
			out:       answered(op, []providers.Record{inState(agreeing("SM1"), providers.StateFailed, "undelivered")}),
			want:      proof.Decision{Reason: proof.ReasonProviderFailed, RecordIDs: []string{"SM1"}},
			detailHas: []string{"SM1 failed (undelivered)"},
		},
		{
			desc:      "one agreeing record still in flight is in_flight, never done and never not_found",
			op:        op,
			out:       answered(op, []providers.Record{inState(agreeing("SM1"), providers.StateInFlight, "scheduled")}),
			want:      proof.Decision{Reason: proof.ReasonInFlight, RecordIDs: []string{"SM1"}},
			detailHas: []string{"SM1 in_flight (scheduled)"},
		},
		{
			desc:      "one agreeing record since refunded is provider_reversed",
			op:        op,
			out:       answered(op, []providers.Record{inState(agreeing("ch_1"), providers.StateReversed, "refunded 1299 of 1299")}),
			want:      proof.Decision{Reason: proof.ReasonProviderReversed, RecordIDs: []string{"ch_1"}},
			detailHas: []string{"refunded 1299 of 1299"},
		},
		{
			desc: "one effect beside failed attempts is done with the effect: a failed attempt made nothing",
			op:   op,
			out: answered(op, []providers.Record{inState(agreeing("SM1"), providers.StateFailed, "failed"), agreeing("SM2"),
				inState(agreeing("SM3"), providers.StateFailed, "canceled")}),
			want:      proof.Decision{Done: true, ProviderRecordID: "SM2", RecordIDs: []string{"SM1", "SM2", "SM3"}},
			detailHas: []string{"SM1 failed,", "SM3 failed (canceled)"},
		},
		{
			desc: "one effect beside another attempt still in flight waits: the second may become a duplicate",
			op:   op,
			out: answered(op, []providers.Record{agreeing("SM1"),
				inState(agreeing("SM2"), providers.StateInFlight, "scheduled")}),
			want: proof.Decision{Reason: proof.ReasonInFlight, RecordIDs: []string{"SM1", "SM2"}},
		},
		{
			desc: "one effect beside a reversed one goes to a person",
			op:   op,
			out: answered(op, []providers.Record{inState(agreeing("ch_1"), providers.StateReversed, "refunded"),
				agreeing("ch_2")}),
			want: proof.Decision{Reason: proof.ReasonProviderReversed, RecordIDs: []string{"ch_1", "ch_2"}},
		},
		{
			desc: "two effects beside a failed attempt are multiple_matches",
			op:   op,
			out: answered(op, []providers.Record{agreeing("SM1"), agreeing("SM2"),
				inState(agreeing("SM3"), providers.StateFailed, "failed")}),
			want: proof.Decision{Reason: proof.ReasonMultipleMatches, RecordIDs: []string{"SM1", "SM2", "SM3"}},
		},
		{
			desc: "a failed record beside a differing effect is payload_mismatch, never done",
			op:   op,
			out: answered(op, []providers.Record{inState(agreeing("SM1"), providers.StateFailed, "failed"),
				{ID: "SM2", CreatedAt: at, Recipient: recipient, PayloadHash: otherHash}}),
			want: proof.Decision{Reason: proof.ReasonPayloadMismatch, RecordIDs: []string{"SM1", "SM2"},
				DifferingFields: []string{"payload_hash"}},
		},
		{
			desc:      "an empty answer for an operation without payload_hash is invalid_operation, not not_found",
			op:        noHash,
			out:       answered(noHash, nil),
			want:      proof.Decision{Reason: proof.ReasonInvalidOperation},
			detailHas: []string{"payload_hash"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got := proof.Decide(tt.op, tt.out)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(proof.Decision{}, "Detail"),
				cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Decide mismatch (-want +got):\n%s", diff)
			}
			if got.Detail == "" {
				t.Error("Detail is empty; a person needs to read why")
			}
			for _, s := range tt.detailHas {
				if !strings.Contains(got.Detail, s) {
					t.Errorf("Detail %q does not mention %q", got.Detail, s)
				}
			}
		})
	}
}

// TestDecideNeverDoneWithoutProof runs every outcome that proves nothing
// against operations of every shape: none may be done, and none that did not
// search may claim the provider holds nothing (I3).
func TestDecideNeverDoneWithoutProof(t *testing.T) {
	t.Parallel()
	op := decisionOp(t, "+15550100777", `{"body":"hi"}`)
	noHash := op
	noHash.PayloadHash = ""
	noAction := op
	noAction.Action = ""
	ops := map[string]ledger.Operation{"complete": op, "no payload hash": noHash, "no action": noAction,
		"zero": {}}
	unsearched := map[string]proof.Outcome{
		"zero outcome": {},
		"failed":       proof.Failed(""),
		"unsupported":  proof.Unsupported(""),
		"invalid":      proof.Invalid(""),
	}
	for opDesc, op := range ops {
		for outDesc, out := range unsearched {
			d := proof.Decide(op, out)
			if d.Done || d.ProviderRecordID != "" {
				t.Errorf("%s op, %s: Decide = done (%+v)", opDesc, outDesc, d)
			}
			if d.Reason == proof.ReasonNotFound || d.Reason == "" {
				t.Errorf("%s op, %s: Reason = %q", opDesc, outDesc, d.Reason)
			}
		}
	}
}

func TestLookable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc        string
		payloadHash string
		action      string
		want        string
	}{
		{desc: "complete", payloadHash: strings.Repeat("a", 64), action: "charge", want: ""},
		{desc: "no payload hash", action: "charge", want: "missing payload_hash"},
		{desc: "no action", payloadHash: strings.Repeat("a", 64), want: "missing action"},
		{desc: "neither", want: "missing payload_hash, action"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got := proof.Lookable(ledger.Operation{OpKey: "k", PayloadHash: tt.payloadHash, Action: tt.action})
			if got != tt.want {
				t.Errorf("Lookable = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReasonDescribe(t *testing.T) {
	t.Parallel()
	seen := map[string]proof.Reason{}
	for _, r := range proof.Reasons {
		d := r.Describe()
		if d == "" || d == string(r) {
			t.Errorf("%s: Describe = %q, want words for people", r, d)
		}
		if other, ok := seen[d]; ok {
			t.Errorf("%s and %s share the description %q", r, other, d)
		}
		seen[d] = r
	}
	if len(proof.Reasons) != 12 {
		t.Errorf("Reasons has %d entries, want the 12 of docs/architecture.md (ten of settling, two of the audit)", len(proof.Reasons))
	}
}
