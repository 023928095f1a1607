package web

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sweeper/sweeper/proof"
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

// cells is one record beside the ledger row, as the proof rule compares
// them ([proof.Evidence.Compare]): the same verdicts that decide whether a
// person's choice of the record needs a confirmation.
func cells(ev proof.Evidence, rec proof.EvidenceRecord) []cell {
	var out []cell
	for _, c := range ev.Compare(rec) {
		out = append(out, cell(c))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
