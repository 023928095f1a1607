package proof

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// Verdicts of one field compared between the ledger row and a provider
// record.
const (
	VerdictAgree   = "agree"
	VerdictDiffer  = "differ"
	VerdictUnknown = "unknown"
)

// comparisonStamp is how a comparison writes times, in UTC.
const comparisonStamp = "2006-01-02 15:04:05"

// FieldComparison is one field of a provider record beside the ledger
// row's: what each side holds, as the evidence keeps it (masked, hashed,
// a text's length), and whether they agree.
type FieldComparison struct {
	// Field names what is compared: "recipient (normalized)", "payload
	// hash", "time inside the lookup window", "state", "field PATH".
	Field string
	// Ledger and Record are what each side holds, for people.
	Ledger, Record string
	// Verdict is [VerdictAgree], [VerdictDiffer] or [VerdictUnknown].
	Verdict string
}

// FindRecord returns the record of ev with id, if the evidence holds one.
func (ev Evidence) FindRecord(id string) (EvidenceRecord, bool) {
	i := slices.IndexFunc(ev.Records, func(r EvidenceRecord) bool { return r.ID == id })
	if i < 0 {
		return EvidenceRecord{}, false
	}
	return ev.Records[i], true
}

// Compare lays rec beside the ledger row field by field, as the proof
// rule compares them: the recipient after its normalization, the payload
// hash, the time inside the lookup's window, the state; then each of the
// record's own fields against the ledger's payload. Only what the snapshot
// holds is shown: masked recipients, hashes, dates, states, a text's
// length — never the text, nor the provider's status words or excerpts.
func (ev Evidence) Compare(rec EvidenceRecord) []FieldComparison {
	out := make([]FieldComparison, 0, 4+len(rec.Fields))

	recipient := FieldComparison{Field: "recipient (normalized)", Ledger: orDash(ev.RecipientMasked), Record: orDash(rec.RecipientMasked), Verdict: VerdictUnknown}
	if rec.RecipientAgrees != nil {
		recipient.Verdict = verdictOf(*rec.RecipientAgrees)
	}
	out = append(out, recipient)

	hash := FieldComparison{Field: "payload hash", Ledger: shortHash(ev.PayloadHash), Record: shortHash(rec.PayloadHash), Verdict: VerdictUnknown}
	if ev.PayloadHash != "" && rec.PayloadHash != "" {
		hash.Verdict = verdictOf(ev.PayloadHash == rec.PayloadHash)
	}
	out = append(out, hash)

	when := FieldComparison{Field: "time inside the lookup window", Ledger: "—", Record: "—", Verdict: VerdictUnknown}
	windowed := ev.Query != nil && !ev.Query.Until.IsZero()
	if windowed {
		when.Ledger = ev.Query.Since.UTC().Format(comparisonStamp) + " – " + ev.Query.Until.UTC().Format(comparisonStamp)
	}
	if !rec.CreatedAt.IsZero() {
		when.Record = rec.CreatedAt.UTC().Format(comparisonStamp)
		if windowed {
			when.Verdict = verdictOf(!rec.CreatedAt.Before(ev.Query.Since) && !rec.CreatedAt.After(ev.Query.Until))
		}
	}
	out = append(out, when)

	state := string(rec.State)
	if state == "" {
		state = string(providers.StateEffect)
	}
	out = append(out, FieldComparison{Field: "state", Ledger: "the effect (" + orDash(ev.Action) + ")", Record: state,
		Verdict: verdictOf(state == string(providers.StateEffect))})

	if rec.Fields == nil {
		// Nothing to lay side by side: the hash says all there is.
		return out
	}
	names := make([]string, 0, len(rec.Fields)+len(ev.Payload))
	for k := range rec.Fields {
		names = append(names, k)
	}
	for k := range ev.Payload {
		if _, ok := rec.Fields[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		rv, inRecord := rec.Fields[k]
		lv, inLedger := ev.Payload[k]
		if !inRecord {
			// Only the ledger's payload holds it: the record lacks what
			// the workflow meant to send.
			out = append(out, FieldComparison{Field: "field " + k, Ledger: describeValue(lv, true), Record: "— (none)", Verdict: VerdictDiffer})
			continue
		}
		out = append(out, fieldComparisons(k, rv, lv, inLedger, ev.Payload != nil)...)
	}
	return out
}

// Differing names what of rec the evidence marks as differing from the
// ledger row: each field [Evidence.Compare] finds differing, and — for a
// payload_mismatch, whose decision named the differing fields of its one
// effect record — those of the decision's names the comparison cannot
// show (a payload field by name, a record id the row already holds). Nil
// when nothing differs.
func (ev Evidence) Differing(rec EvidenceRecord) []string {
	var out []string
	for _, c := range ev.Compare(rec) {
		if c.Verdict == VerdictDiffer {
			out = append(out, c.Field)
		}
	}
	if ev.Reason != ReasonPayloadMismatch || (rec.State != "" && rec.State != providers.StateEffect) {
		return out
	}
	shown := map[string]string{"payload_hash": "payload hash", "recipient": "recipient (normalized)", "created_at": "time inside the lookup window"}
	for _, f := range ev.DifferingFields {
		name, _, _ := strings.Cut(f, " ")
		if c, ok := shown[name]; ok && slices.Contains(out, c) {
			continue
		}
		if k, ok := strings.CutPrefix(f, "payload."); ok && slices.Contains(out, "field "+k) {
			continue
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// fieldComparisons is one of the record's fields as evidence keeps it: a
// text (a [FieldText] — its length, masked when it is an address)
// compared with the ledger's payload; nested values by path. lv is the
// ledger payload's value at the same place, present whether there is
// one, kept whether the evidence holds the ledger's payload at all (older
// evidence does not: its ledger side says "payload").
func fieldComparisons(path string, v, lv any, present, kept bool) []FieldComparison {
	ledgerSide := "payload"
	if kept {
		ledgerSide = describeValue(lv, present)
	}
	one := func(record, verdict string) []FieldComparison {
		return []FieldComparison{{Field: "field " + path, Ledger: ledgerSide, Record: record, Verdict: verdict}}
	}
	switch t := v.(type) {
	case FieldText:
		return fieldComparisons(path, t.asJSON(), lv, present, kept)
	case map[string]any:
		if f, ok := fieldTextOf(t); ok {
			verdict := VerdictUnknown
			if f.Agrees != nil {
				verdict = verdictOf(*f.Agrees)
			}
			return one(describeValue(t, true), verdict)
		}
		lm, _ := lv.(map[string]any)
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var out []FieldComparison
		for _, k := range keys {
			le, in := lm[k]
			out = append(out, fieldComparisons(path+"."+k, t[k], le, present && in, kept)...)
		}
		return out
	case []any:
		ls, _ := lv.([]any)
		var out []FieldComparison
		for i, e := range t {
			var le any
			if i < len(ls) {
				le = ls[i]
			}
			out = append(out, fieldComparisons(fmt.Sprintf("%s[%d]", path, i), e, le, present && i < len(ls), kept)...)
		}
		return out
	}
	verdict := VerdictUnknown
	if kept {
		if same, ok := sameScalar(v, lv, present); ok {
			verdict = verdictOf(same)
		}
	}
	return one(describeValue(v, true), verdict)
}

// sameScalar compares a number or a boolean of a record with the ledger
// payload's at the same place; ok is false when either is no such value
// (a masked phone number, a text): evidence cannot tell then.
func sameScalar(v, lv any, present bool) (same, ok bool) {
	number := func(x any) (float64, bool) {
		switch t := x.(type) {
		case json.Number:
			f, err := t.Float64()
			return f, err == nil
		case float64:
			return t, true
		case int:
			return float64(t), true
		case int64:
			return float64(t), true
		}
		return 0, false
	}
	if a, isNumber := number(v); isNumber {
		if !present {
			return false, true
		}
		b, ok := number(lv)
		return ok && a == b, true
	}
	if a, isBool := v.(bool); isBool {
		b, ok := lv.(bool)
		return present && ok && a == b, true
	}
	return false, false
}

// describeValue shows a value as evidence keeps it, for people: a text by
// its length (an address masked), a number or a boolean as it is; "—"
// when there is none.
func describeValue(v any, present bool) string {
	if !present {
		return "— (none)"
	}
	switch t := v.(type) {
	case FieldText:
		return describeValue(t.asJSON(), true)
	case map[string]any:
		if f, ok := fieldTextOf(t); ok {
			if f.Masked != "" {
				return f.Masked
			}
			return fmt.Sprintf("text, %d characters", f.Length)
		}
		return fmt.Sprintf("an object of %d fields", len(t))
	case []any:
		return fmt.Sprintf("a list of %d", len(t))
	case nil:
		return "null"
	case string:
		// Evidence never holds a field's text; a string here is a number
		// masked as a recipient.
		return MaskRecipient(t)
	}
	return fmt.Sprint(v)
}

// asJSON is f as it reads back from evidence's JSON.
func (f FieldText) asJSON() map[string]any {
	return map[string]any{"digest": f.Digest, "length": float64(f.Length), "agrees": boolOrNil(f.Agrees), "masked": f.Masked}
}

func boolOrNil(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// fieldTextOf reads a [FieldText] from its JSON form.
func fieldTextOf(m map[string]any) (FieldText, bool) {
	if len(m) < 2 || len(m) > 4 {
		return FieldText{}, false
	}
	digest, ok1 := m["digest"].(string)
	length, ok2 := m["length"].(float64)
	if !ok1 || !ok2 {
		return FieldText{}, false
	}
	f := FieldText{Digest: digest, Length: int(length)}
	if a, ok := m["agrees"].(bool); ok {
		f.Agrees = &a
	}
	if s, ok := m["masked"].(string); ok {
		f.Masked = s
	}
	return f, true
}

func verdictOf(ok bool) string {
	if ok {
		return VerdictAgree
	}
	return VerdictDiffer
}

func shortHash(hash string) string {
	if len(hash) > 16 {
		return hash[:16] + "…"
	}
	return orDash(hash)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// DescribeHashes says what the two payload hashes of a comparison mean
// when the record carries no fields to lay side by side.
func DescribeHashes(ledgerHash, recordHash string) string {
	switch {
	case recordHash == "":
		return "the record carries no payload hash: whether it holds what the workflow meant to send cannot be told from the evidence"
	case ledgerHash == recordHash:
		return "both sides hold the same payload hash: the record holds what the workflow meant to send"
	}
	return "the record's payload hash is not the ledger row's: the provider holds other content than the workflow meant to send (another template, other values, or another operation's message)"
}
