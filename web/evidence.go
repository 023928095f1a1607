package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

// stamp is how the comparison writes times, in UTC.
const stamp = "2006-01-02 15:04:05"

// Verdicts of one comparison between the ledger and a provider record.
const (
	agree   = "agree"
	differ  = "differ"
	unknown = "unknown"
)

// comparison is a ticket's evidence side by side: what the ledger holds,
// and each provider record against it, field by field.
type comparison struct {
	Ledger  ledgerSide
	Records []recordSide
	// Window is the lookup's time window, when there was a search.
	Since, Until time.Time
	// Errors counts the failed lookup attempts, by class; their text is
	// the provider's and stays out of the page.
	Errors []string
	Valid  bool
}

type ledgerSide struct {
	OpKey, Workflow, Provider, Action string
	Recipient                         string // masked
	PayloadHash                       string
	Attempts                          int
	FirstAttemptAt, LastAttemptAt     time.Time
}

type recordSide struct {
	ID    string
	Cells []cell
}

// cell is one row of the comparison: the field, the ledger's value, the
// record's, and whether they agree.
type cell struct {
	Field, Ledger, Record, Verdict string
}

// compare lays a ticket's evidence snapshot out side by side. Only what
// the snapshot already holds is shown: masked recipients, hashes, dates,
// states, and of the record's own fields whether each agrees with the
// ledger's payload — never the text itself, nor the provider's status
// words, excerpts or error messages.
func compare(raw json.RawMessage) comparison {
	var ev proof.Evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		return comparison{}
	}
	c := comparison{Valid: true, Ledger: ledgerSide{OpKey: ev.OpKey, Workflow: ev.Workflow, Provider: ev.Provider,
		Action: ev.Action, Recipient: ev.RecipientMasked, PayloadHash: ev.PayloadHash, Attempts: ev.Attempts,
		FirstAttemptAt: ev.FirstAttemptAt, LastAttemptAt: ev.LastAttemptAt}}
	if ev.Query != nil {
		c.Since, c.Until = ev.Query.Since, ev.Query.Until
	}
	for _, e := range ev.Errors {
		c.Errors = append(c.Errors, fmt.Sprintf("attempt %d at %s: %s", e.Attempt, e.At.UTC().Format(time.RFC3339), orDash(e.Class)))
	}
	for _, rec := range ev.Records {
		c.Records = append(c.Records, recordSide{ID: rec.ID, Cells: cells(ev, rec)})
	}
	return c
}

// cells compares one record with the ledger row, as the proof rule does:
// the recipient after its normalization, the payload hash, the time inside
// the lookup's window, the state; then each of the record's fields.
func cells(ev proof.Evidence, rec proof.EvidenceRecord) []cell {
	out := make([]cell, 0, 4+len(rec.Fields))

	recipient := cell{Field: "recipient (normalized)", Ledger: orDash(ev.RecipientMasked), Record: orDash(rec.RecipientMasked), Verdict: unknown}
	if rec.RecipientAgrees != nil {
		recipient.Verdict = verdict(*rec.RecipientAgrees)
	} else if ev.RecipientMasked == "" || rec.RecipientMasked == "" {
		recipient.Verdict = unknown
	}
	out = append(out, recipient)

	hash := cell{Field: "payload hash", Ledger: short(ev.PayloadHash), Record: short(rec.PayloadHash), Verdict: unknown}
	if ev.PayloadHash != "" && rec.PayloadHash != "" {
		hash.Verdict = verdict(ev.PayloadHash == rec.PayloadHash)
	}
	out = append(out, hash)

	when := cell{Field: "time inside the lookup window", Record: "—", Verdict: unknown}
	if ev.Query != nil && !ev.Query.Until.IsZero() {
		when.Ledger = ev.Query.Since.UTC().Format(stamp) + " – " + ev.Query.Until.UTC().Format(stamp)
	} else {
		when.Ledger = "—"
	}
	if !rec.CreatedAt.IsZero() {
		when.Record = rec.CreatedAt.UTC().Format(stamp)
		if ev.Query != nil && !ev.Query.Until.IsZero() {
			when.Verdict = verdict(!rec.CreatedAt.Before(ev.Query.Since) && !rec.CreatedAt.After(ev.Query.Until))
		}
	}
	out = append(out, when)

	state := string(rec.State)
	if state == "" {
		state = string(providers.StateEffect)
	}
	out = append(out, cell{Field: "state", Ledger: "the effect (" + orDash(ev.Action) + ")", Record: state,
		Verdict: verdict(state == string(providers.StateEffect))})

	names := make([]string, 0, len(rec.Fields))
	for k := range rec.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, fieldCells(k, rec.Fields[k])...)
	}
	return out
}

// fieldCells is one of the record's fields as evidence keeps it: a text
// (a [proof.FieldText] — its digest and length, masked when it is an
// address) compared with the ledger's payload; nested values by path.
func fieldCells(path string, v any) []cell {
	switch t := v.(type) {
	case map[string]any:
		if f, ok := fieldText(t); ok {
			shown := fmt.Sprintf("text, %d characters", f.Length)
			if f.Masked != "" {
				shown = f.Masked
			}
			c := cell{Field: "field " + path, Ledger: "payload", Record: shown, Verdict: unknown}
			if f.Agrees != nil {
				c.Verdict = verdict(*f.Agrees)
			}
			return []cell{c}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var out []cell
		for _, k := range keys {
			out = append(out, fieldCells(path+"."+k, t[k])...)
		}
		return out
	case []any:
		var out []cell
		for i, e := range t {
			out = append(out, fieldCells(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
		return out
	case nil:
		return []cell{{Field: "field " + path, Ledger: "payload", Record: "null", Verdict: unknown}}
	case string:
		// Evidence never holds a field's text; a string here is a number
		// masked as a recipient.
		return []cell{{Field: "field " + path, Ledger: "payload", Record: proof.MaskRecipient(t), Verdict: unknown}}
	}
	return []cell{{Field: "field " + path, Ledger: "payload", Record: fmt.Sprint(v), Verdict: unknown}}
}

// fieldText reads a [proof.FieldText] from its JSON form.
func fieldText(m map[string]any) (proof.FieldText, bool) {
	if len(m) < 2 || len(m) > 4 {
		return proof.FieldText{}, false
	}
	digest, ok1 := m["digest"].(string)
	length, ok2 := m["length"].(float64)
	if !ok1 || !ok2 {
		return proof.FieldText{}, false
	}
	f := proof.FieldText{Digest: digest, Length: int(length)}
	if a, ok := m["agrees"].(bool); ok {
		f.Agrees = &a
	}
	if s, ok := m["masked"].(string); ok {
		f.Masked = s
	}
	return f, true
}

func verdict(ok bool) string {
	if ok {
		return agree
	}
	return differ
}

func short(hash string) string {
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
