package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Evidence is a ticket's immutable snapshot of what sweeper saw when it
// opened the ticket. It holds no raw recipient: recipients are masked for
// people and hashed for matching (I7), here and in every record.
type Evidence struct {
	OpKey           string    `json:"op_key"`
	Workflow        string    `json:"workflow"`
	Provider        string    `json:"provider"`
	Action          string    `json:"action"`
	RecipientMasked string    `json:"recipient_masked,omitempty"`
	RecipientHash   string    `json:"recipient_sha256,omitempty"`
	PayloadHash     string    `json:"payload_hash,omitempty"`
	Attempts        int       `json:"attempts"`
	FirstAttemptAt  time.Time `json:"first_attempt_at"`
	LastAttemptAt   time.Time `json:"last_attempt_at,omitzero"`

	// Adapter is the provider block's kind ("sim", "http", …); empty when
	// the provider is not configured.
	Adapter string `json:"adapter,omitempty"`
	// Query is what the adapter was asked, recipient masked.
	Query *EvidenceQuery `json:"query,omitempty"`
	// Records are what the provider returned.
	Records []EvidenceRecord `json:"records"`
	// Errors lists every failed attempt, oldest first.
	Errors []AttemptError `json:"errors"`
	// LookedUpAt is when the deciding lookup ran.
	LookedUpAt time.Time `json:"looked_up_at"`

	// Payload is the ledger row's payload as evidence keeps it, to lay
	// beside each record's fields: every string a [FieldText] — its
	// digest comparable with the records' of this snapshot, its length,
	// masked when it is an address — with Agrees unset; numbers and
	// booleans kept. Absent when the row has no payload, and in evidence
	// written before it was kept.
	Payload map[string]any `json:"payload,omitempty"`

	// LedgerStatus and LedgerRecordID are the row's status and record id
	// as an audit of a settled operation read them ([Audit]); empty in the
	// evidence of a lookup of a pending operation.
	LedgerStatus   ledger.Status `json:"ledger_status,omitempty"`
	LedgerRecordID string        `json:"ledger_record_id,omitempty"`

	// Decision is what the lookup proved.
	Reason          Reason   `json:"reason"`
	Detail          string   `json:"detail"`
	DifferingFields []string `json:"differing_fields,omitempty"`
}

// EvidenceQuery is a [providers.Query] as evidence shows it.
type EvidenceQuery struct {
	OpKey           string    `json:"op_key"`
	RecipientMasked string    `json:"recipient_masked,omitempty"`
	Action          string    `json:"action"`
	PayloadHash     string    `json:"payload_hash,omitempty"`
	Since           time.Time `json:"since"`
	Until           time.Time `json:"until"`
}

// EvidenceRecord is a [providers.Record] as evidence shows it: its id,
// dates, state and hashes as they are, and none of the provider's text
// (see [NewEvidence]).
type EvidenceRecord struct {
	ID              string    `json:"id"`
	CreatedAt       time.Time `json:"created_at,omitzero"`
	RecipientMasked string    `json:"recipient_masked,omitempty"`
	// RecipientAgrees says whether the record's recipient is the
	// operation's by the proof rule's comparison (after its one
	// normalization; phone numbers in E.164 when the provider matches
	// phones); nil when either has none, or for evidence written before it
	// was kept.
	RecipientAgrees *bool `json:"recipient_agrees,omitempty"`
	// State and Status are the record's [providers.Record.State] and the
	// provider's own status word.
	State  providers.State `json:"state,omitempty"`
	Status string          `json:"status,omitempty"`
	// Fields are the record's normalized fields with every string replaced
	// by its [FieldText]; numbers and booleans are kept.
	Fields      map[string]any `json:"fields,omitempty"`
	PayloadHash string         `json:"payload_hash,omitempty"`
	Excerpt     string         `json:"excerpt,omitempty"`
}

// FieldText is a string of a record's fields as evidence keeps it: never
// the text. A message body, a subject, a one-time code or a login link is
// the customer's, and evidence can never be deleted; what a person needs
// to decide is whether the provider holds what the workflow meant to send,
// which Agrees says, and whether two records of one snapshot hold the same
// text, which Digest says.
type FieldText struct {
	// Digest is the first 12 hex digits of the HMAC-SHA-256 of the text's
	// UTF-8 bytes under a key drawn for this evidence snapshot and never
	// kept: two texts of one snapshot compare, but a short text — a
	// six-digit code — cannot be recovered by hashing every candidate, as
	// a plain hash would allow.
	Digest string `json:"digest"`
	// Length counts the text's characters (code points).
	Length int `json:"length"`
	// Agrees says whether the ledger's payload holds the same text at the
	// same place (compared in Unicode NFC, as the payload hash compares
	// it); false when it holds something else or nothing there, null when
	// the ledger row has no payload to compare with.
	Agrees *bool `json:"agrees"`
	// Masked is set for an email address or a phone number:
	// [MaskRecipient]'s form, as every recipient in evidence shows.
	Masked string `json:"masked,omitempty"`
}

// StorableText is s as PostgreSQL's text and jsonb can hold it: without
// NUL characters, and with invalid UTF-8 replaced. A provider's error text
// is whatever the provider sent; a text the database refuses would fail the
// write of every outcome that carries it.
func StorableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// AttemptError is one failed lookup attempt.
type AttemptError struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Class   string    `json:"class,omitempty"`
	Error   string    `json:"error"`
}

// LookupReport is everything known about the lookup behind a decision, for the
// evidence.
type LookupReport struct {
	Adapter string
	Query   *providers.Query
	Outcome Outcome
	Errors  []AttemptError
	At      time.Time
}

// NewEvidence assembles the snapshot for op, decided as d after lookup.
//
// No text of the provider's is kept as it was written: every string of a
// record's fields becomes a [FieldText], and every such string — and every
// string of the ledger's payload — is replaced by "[redacted]" wherever an
// excerpt, a status, an error or the decision's detail quotes it, and a
// link in an excerpt by "[link]": an adapter that quotes a message body is
// caught here, once. What a provider wrote in an error it answered with
// never reaches here as text: adapters carry it as a
// [providers.ProviderText], whose message is a length and a digest.
// Excerpts, statuses, errors and the detail are also made
// [safetext.Printable].
//
// Recipients are masked and hashed, and every text the snapshot keeps —
// the op_key, workflow and action, the query's, each error, the decision's
// detail and differing fields, each excerpt, the strings and keys of each
// record's fields — is redacted ([providers.RedactText]) for the
// operation's recipient, the query's and every record's, in any form an
// adapter or a provider may have quoted them: another letter case,
// URL-escaped, a phone number grouped otherwise. Record ids are kept as
// they are: they are what a person resolves the ticket with.
func NewEvidence(op ledger.Operation, lookup LookupReport, d Decision) Evidence {
	recipients := []string{op.Recipient}
	if lookup.Query != nil {
		recipients = append(recipients, lookup.Query.Recipient)
	}
	for _, r := range lookup.Outcome.Records() {
		recipients = append(recipients, r.Recipient)
	}
	redact := func(s string) string { return providers.RedactText(s, recipients...) }
	payload, known := ledgerPayload(op.Payload)
	texts := freeTexts(payload, nil)
	for _, r := range lookup.Outcome.Records() {
		texts = freeTexts(r.Fields, texts)
	}
	digest := snapshotDigest()
	// Provider text: what a provider wrote, quoted by an adapter.
	quoted := func(s string) string { return safetext.Printable(providers.RedactText(redact(s), texts...)) }
	// The decision's detail names on purpose the operation's op_key, its
	// candidates' and the records': those stay whole even where a text of
	// the payload happens to be part of one ("signup-4711-welcome-retry"
	// beside a payload holding "welcome").
	var named []string
	for _, id := range append(append([]string{op.OpKey}, d.Candidates...), d.RecordIDs...) {
		if id = redact(id); id != "" {
			named = append(named, id)
		}
	}
	detail := func(s string) string {
		return safetext.Printable(keepWhole(redact(s), named, func(s string) string { return providers.RedactText(s, texts...) }))
	}

	ev := Evidence{
		OpKey:           redact(op.OpKey),
		Workflow:        redact(op.Workflow),
		Provider:        op.Provider,
		Action:          redact(op.Action),
		RecipientMasked: MaskRecipient(op.Recipient),
		RecipientHash:   HashRecipient(op.Recipient),
		PayloadHash:     op.PayloadHash,
		Attempts:        op.Attempts,
		FirstAttemptAt:  op.FirstAttemptAt,
		LastAttemptAt:   op.LastAttemptAt,
		Adapter:         lookup.Adapter,
		Records:         []EvidenceRecord{},
		Errors:          make([]AttemptError, 0, len(lookup.Errors)),
		LookedUpAt:      lookup.At,
		Reason:          d.Reason,
		// The decision's detail can quote a lookup's error, whose text
		// is an adapter's: it gets what every error gets.
		Detail: detail(d.Detail),
	}
	if known {
		// Compared with nothing: its Agrees stay unset.
		ev.Payload = fieldsOf(payload, nil, false, redact, digest)
	}
	for _, e := range lookup.Errors {
		e.Class, e.Error = redact(e.Class), quoted(e.Error)
		ev.Errors = append(ev.Errors, e)
	}
	for _, f := range d.DifferingFields {
		ev.DifferingFields = append(ev.DifferingFields, redact(f))
	}
	if q := lookup.Query; q != nil {
		ev.Query = &EvidenceQuery{
			OpKey:           redact(q.OpKey),
			RecipientMasked: MaskRecipient(q.Recipient),
			Action:          redact(q.Action),
			PayloadHash:     q.PayloadHash,
			Since:           q.Since,
			Until:           q.Until,
		}
	}
	var match providers.Matching
	if lookup.Query != nil {
		match = lookup.Query.Match
	}
	for _, r := range lookup.Outcome.Records() {
		var agrees *bool
		if op.Recipient != "" && r.Recipient != "" {
			same := sameRecipient(match, op.Recipient, r.Recipient)
			agrees = &same
		}
		ev.Records = append(ev.Records, EvidenceRecord{
			ID:              r.ID,
			CreatedAt:       r.CreatedAt,
			RecipientMasked: MaskRecipient(r.Recipient),
			RecipientAgrees: agrees,
			State:           r.State,
			Status:          truncate(quoted(r.Status), 40),
			Fields:          fieldsOf(r.Fields, payload, known, redact, digest),
			PayloadHash:     r.PayloadHash,
			// Redacted before it is cut: a recipient cut in half would no
			// longer be found.
			Excerpt: truncate(quoted(linkPattern.ReplaceAllString(r.Excerpt, "[link]")), 200),
		})
	}
	return ev
}

// linkPattern finds links in an excerpt: a login or tracking link is a
// key to the customer's account.
var linkPattern = regexp.MustCompile(`(?i)\b(?:[a-z][a-z0-9+.-]*://|www\.)[^\s"'<>]+`)

// ledgerPayload decodes the ledger row's payload; known is false when the
// row has none (or none that decodes), so no field can agree with it.
func ledgerPayload(payload json.RawMessage) (fields map[string]any, known bool) {
	if len(payload) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

// freeTexts appends every string held in v (maps, slices, typed values
// through their JSON form) to texts.
func freeTexts(v any, texts []string) []string {
	switch t := generic(v).(type) {
	case string:
		return append(texts, t)
	case map[string]any:
		for _, e := range t {
			texts = freeTexts(e, texts)
		}
	case []any:
		for _, e := range t {
			texts = freeTexts(e, texts)
		}
	}
	return texts
}

// fieldsOf is a record's fields as evidence keeps them: keys redacted,
// every string a [FieldText] compared with the ledger's payload at the
// same place, numbers and booleans as they are (a phone number written as
// a number masked).
func fieldsOf(fields, ledger map[string]any, known bool, redact, digest func(string) string) map[string]any {
	if fields == nil {
		return nil
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		lv, ok := ledger[k]
		out[redact(k)] = fieldValue(v, lv, ok, known, redact, digest)
	}
	return out
}

// fieldValue is v as evidence keeps it; lv is the ledger payload's value
// at the same place, present says whether there is one, known whether the
// ledger row has a payload at all.
func fieldValue(v, lv any, present, known bool, redact, digest func(string) string) any {
	switch t := generic(v).(type) {
	case string:
		f := FieldText{Digest: digest(t), Length: utf8.RuneCountInString(t)}
		if known {
			ls, ok := lv.(string)
			agrees := present && ok && norm.NFC.String(ls) == norm.NFC.String(t)
			f.Agrees = &agrees
		}
		if looksLikeRecipient(t) {
			f.Masked = MaskRecipient(t)
		}
		return f
	case json.Number:
		if looksPersonal(t.String()) {
			return MaskRecipient(t.String())
		}
		return t
	case float64:
		// A phone number stored as a JSON number.
		if t == math.Trunc(t) && math.Abs(t) >= 1e6 {
			return MaskRecipient(strconv.FormatFloat(t, 'f', 0, 64))
		}
		return t
	case map[string]any:
		lm, ok := lv.(map[string]any)
		out := make(map[string]any, len(t))
		for k, e := range t {
			le, in := lm[k]
			out[redact(k)] = fieldValue(e, le, present && ok && in, known, redact, digest)
		}
		return out
	case []any:
		ls, ok := lv.([]any)
		out := make([]any, len(t))
		for i, e := range t {
			var le any
			if ok && i < len(ls) {
				le = ls[i]
			}
			out[i] = fieldValue(e, le, present && ok && i < len(ls), known, redact, digest)
		}
		return out
	case nil, bool, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return t
	}
	return nil // not a JSON value
}

// generic is v with a typed value ([]string, map[string]string, a struct,
// a named string type) replaced by its JSON form decoded into maps, slices
// and scalars: otherwise its strings would pass the cases of [fieldValue]
// unseen. A value JSON cannot encode is nil.
func generic(v any) any {
	switch v.(type) {
	case string, json.Number, float64, map[string]any, []any, nil, bool, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil
	}
	return out
}

// snapshotDigest returns the digest of one evidence snapshot's texts: the
// HMAC-SHA-256 under a random key it keeps only while the snapshot is
// built, cut to 12 hex digits ([providers.NewDigest]).
func snapshotDigest() func(string) string { return providers.NewDigest() }

// MaskRecipient keeps enough of an address for a person to recognise it
// and too little to use it: "a***@e***.com", "+1*******0100".
func MaskRecipient(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if local, domain, ok := strings.Cut(s, "@"); ok {
		// The domain can name the person's employer: only its top level
		// stays.
		masked := keepFirst(local, 1) + "@***"
		if i := strings.LastIndexByte(domain, '.'); i >= 0 && i < len(domain)-1 {
			masked += domain[i:]
		}
		return masked
	}
	runes := []rune(s)
	if len(runes) <= 4 {
		return strings.Repeat("*", len(runes))
	}
	keepHead := 2
	if len(runes) < 10 {
		keepHead = 1
	}
	// Never show more than half: with a fixed tail of four, a five-character
	// value came back whole.
	keepTail := min(4, len(runes)/2-keepHead)
	return string(runes[:keepHead]) + strings.Repeat("*", len(runes)-keepHead-keepTail) + string(runes[len(runes)-keepTail:])
}

func keepFirst(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= n {
		return strings.Repeat("*", max(len(runes), 1))
	}
	return string(runes[:n]) + "***"
}

// HashRecipient is the SHA-256 (hex) of the recipient, lowercased and
// trimmed, so evidence can be matched against an address without holding it.
func HashRecipient(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// looksLikeRecipient spots email addresses and phone numbers written as
// recipients are: with a "+" or at least ten digits. A shorter run of
// digits is as likely a one-time code, whose mask would show half of it.
func looksLikeRecipient(s string) bool {
	if strings.Contains(s, "@") {
		return true
	}
	if !looksPersonal(s) {
		return false
	}
	digits := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return strings.HasPrefix(strings.TrimSpace(s), "+") || digits >= 10
}

// looksPersonal spots email addresses and phone numbers.
func looksPersonal(s string) bool {
	if strings.Contains(s, "@") {
		return true
	}
	digits := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune("+-() .", r):
		default:
			return false
		}
	}
	return digits >= 7
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// keepWhole applies f to s, except to the occurrences of names in it,
// which come out as they went in: each is set aside behind a marker of
// the Unicode private use area before f runs, and put back after.
func keepWhole(s string, names []string, f func(string) string) string {
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) }) // longest first
	var kept []string
	for _, n := range names {
		if !strings.Contains(s, n) {
			continue
		}
		marker := fmt.Sprintf("\uE000%d\uE001", len(kept))
		s = strings.ReplaceAll(s, n, marker)
		kept = append(kept, n)
	}
	s = f(s)
	for i, n := range kept {
		s = strings.ReplaceAll(s, fmt.Sprintf("\uE000%d\uE001", i), n)
	}
	return s
}
