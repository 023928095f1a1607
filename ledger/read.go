package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// rawOperation is one row as [Table.projection] lists its columns, every
// value nullable, before [Table.operationOf] judges it: a NULL, an
// over-long or a malformed value is then that row's problem, never the
// read's.
type rawOperation struct {
	id, attempts                                           pgtype.Int8
	opKey, workflow, provider, action, sourceID, recipient pgtype.Text
	payloadHash, status, providerRecordID                  pgtype.Text
	payload                                                []byte
	firstAttemptAt, lastAttemptAt, createdAt, updatedAt    pgtype.Timestamptz
}

// scan reads an Operation from the columns [Table.projection] lists. It
// fails only when the database does; what a row holds is judged by
// [Table.operationOf].
func (t *Table) scan(row pgx.CollectableRow) (Operation, error) {
	var r rawOperation
	err := row.Scan(&r.id, &r.opKey, &r.workflow, &r.provider, &r.action, &r.sourceID, &r.recipient,
		&r.payloadHash, &r.payload, &r.status, &r.attempts, &r.firstAttemptAt, &r.lastAttemptAt,
		&r.providerRecordID, &r.createdAt, &r.updatedAt)
	if err != nil {
		return Operation{}, err
	}
	return t.operationOf(r), nil
}

// operationOf is the one place a row's values are judged. Every value is
// read whatever it holds; a row sweeper cannot look up gets
// [Operation.Invalid], naming each column at fault and what is wrong with
// it, never the value (it may be personal). A required value NULL or
// empty (id, op_key, provider, first_attempt_at), one longer than its
// bound ([MaxOpKeyLength], [MaxProviderLength], [MaxNameLength],
// [MaxRecipientLength]), text that is not UTF-8, a payload_hash that is
// not 64 lowercase hex characters, a negative attempts, a payload jsonb
// cannot hold: each is a problem. A NULL payload_hash or action is left
// to the lookup's own check (proof.Lookable), which says "missing"; a
// NULL optional value reads as the table lacking it. A status word the
// mapping does not name is read as it is (not Valid).
func (t *Table) operationOf(r rawOperation) Operation {
	var problems []string
	text := func(key string, v pgtype.Text, required bool, max int) string {
		if !v.Valid {
			if required {
				problems = append(problems, key+" is NULL")
			}
			return ""
		}
		s := v.String
		if !utf8.ValidString(s) {
			problems = append(problems, key+" is not valid UTF-8")
			s = strings.ToValidUTF8(s, "\uFFFD") // storable in a ticket's evidence
		}
		switch n := utf8.RuneCountInString(s); {
		case n == 0 && required:
			problems = append(problems, key+" is empty")
		case n > max:
			problems = append(problems, fmt.Sprintf("%s is longer than %d characters (%d)", key, max, n))
		}
		return s
	}
	op := Operation{
		ID:               r.id.Int64,
		OpKey:            text("op_key", r.opKey, true, MaxOpKeyLength),
		Workflow:         text("workflow", r.workflow, false, MaxNameLength),
		Provider:         text("provider", r.provider, true, MaxProviderLength),
		Action:           text("action", r.action, false, MaxNameLength),
		SourceID:         text("source_id", r.sourceID, false, MaxNameLength),
		Recipient:        text("recipient", r.recipient, false, MaxRecipientLength),
		PayloadHash:      text("payload_hash", r.payloadHash, false, math.MaxInt), // its form is checked below,
		Status:           t.StatusOf(r.status.String),
		Attempts:         1, // as a table without the column reads
		FirstAttemptAt:   finiteTime(r.firstAttemptAt),
		LastAttemptAt:    finiteTime(r.lastAttemptAt),
		ProviderRecordID: text("provider_record_id", r.providerRecordID, false, MaxNameLength),
		CreatedAt:        finiteTime(r.createdAt),
		UpdatedAt:        finiteTime(r.updatedAt),
	}
	if !r.id.Valid {
		problems = append([]string{"id is NULL"}, problems...)
	}
	if op.PayloadHash != "" && !isHexSHA256(op.PayloadHash) {
		problems = append(problems, "payload_hash is not 64 lowercase hex characters")
	}
	if r.attempts.Valid {
		op.Attempts = int(r.attempts.Int64)
		if op.Attempts < 0 {
			problems = append(problems, "attempts is negative")
		}
	}
	if !r.firstAttemptAt.Valid {
		problems = append(problems, "first_attempt_at is NULL")
		// Read as the end of time, where the future-dated scan finds it
		// and its cursor moves past it.
		op.FirstAttemptAt = endOfTime
	}
	if r.payload != nil {
		if problem := payloadProblem(r.payload); problem != "" {
			problems = append(problems, problem)
		} else {
			op.Payload = json.RawMessage(r.payload)
		}
	}
	op.Invalid = strings.Join(problems, "; ")
	return op
}

// payloadProblem says what keeps payload from being read as JSON and
// stored as jsonb in a ticket's evidence, or "". A json column (an
// adopted table's) may hold what jsonb refuses: the escape \u0000.
func payloadProblem(payload []byte) string {
	if !json.Valid(payload) {
		return "payload is not JSON"
	}
	if !bytes.Contains(payload, []byte(`\u0000`)) {
		return ""
	}
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return "payload is not JSON"
	}
	if holdsNUL(v) {
		return `payload holds the character \u0000, which jsonb cannot store`
	}
	return ""
}

// holdsNUL reports whether a decoded JSON value holds a NUL character in
// a string or a key.
func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}
