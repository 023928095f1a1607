package web

import (
	"encoding/json"
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
	// Errors are the failed lookup attempts, by class; their text is
	// the provider's and stays out of the page.
	Errors []failedLookup
	Valid  bool
	// Apart is what tells several records apart: each compared field
	// whose value is not the same in all of them, one column a record.
	Apart []apartRow
}

// failedLookup is one failed lookup attempt: when, and its class.
type failedLookup struct {
	Attempt int
	At      time.Time
	Class   string
}

// apartRow is one field of several records, side by side.
type apartRow struct {
	Field  string
	Values []string
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
	// Hashes says what the payload hashes mean when the record has no
	// fields to lay beside the ledger's payload.
	Hashes string
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
		c.Errors = append(c.Errors, failedLookup{Attempt: e.Attempt, At: e.At, Class: orDash(e.Class)})
	}
	for _, rec := range ev.Records {
		side := recordSide{ID: rec.ID, Cells: cells(ev, rec)}
		if rec.Fields == nil && ev.PayloadHash != "" {
			side.Hashes = proof.DescribeHashes(ev.PayloadHash, rec.PayloadHash)
		}
		c.Records = append(c.Records, side)
	}
	c.Apart = apart(c.Records)
	return c
}

// apart lists what tells records apart: every compared field whose
// record value is not the same in all of them, in the order they are
// compared; none for fewer than two records.
func apart(records []recordSide) []apartRow {
	if len(records) < 2 {
		return nil
	}
	var fields []string
	values := map[string][]string{}
	for i, rec := range records {
		for _, c := range rec.Cells {
			if _, seen := values[c.Field]; !seen {
				fields = append(fields, c.Field)
				values[c.Field] = make([]string, len(records))
				for j := range values[c.Field] {
					values[c.Field][j] = "— (none)"
				}
			}
			values[c.Field][i] = c.Record + " (" + c.Verdict + ")"
		}
	}
	var out []apartRow
	for _, f := range fields {
		v := values[f]
		for _, x := range v[1:] {
			if x != v[0] {
				out = append(out, apartRow{Field: f, Values: v})
				break
			}
		}
	}
	return out
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
