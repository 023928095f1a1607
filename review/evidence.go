package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// EvidenceRecord is a [providers.Record] as evidence shows it.
type EvidenceRecord struct {
	ID              string         `json:"id"`
	CreatedAt       time.Time      `json:"created_at,omitzero"`
	RecipientMasked string         `json:"recipient_masked,omitempty"`
	Fields          map[string]any `json:"fields,omitempty"`
	PayloadHash     string         `json:"payload_hash,omitempty"`
	Excerpt         string         `json:"excerpt,omitempty"`
	// State is where the record stands in the provider's state machine
	// (effect, in_flight, failed, reversed), Status the provider's word.
	State  providers.State `json:"state,omitempty"`
	Status string          `json:"status,omitempty"`
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

// Lookup is everything known about the lookup behind a decision, for the
// evidence.
type Lookup struct {
	Adapter string
	Query   *providers.Query
	Outcome Outcome
	Errors  []AttemptError
	At      time.Time
}

// NewEvidence assembles the snapshot for op, decided as d after lookup.
//
// Recipients are masked and hashed, and every text the snapshot keeps —
// the op_key, workflow and action, the query's, each error, the decision's
// detail and differing fields, each excerpt, the strings and keys of each
// record's fields — is redacted ([providers.RedactText]) for the
// operation's recipient, the query's and every record's, in any form an
// adapter or a provider may have quoted them: another letter case,
// URL-escaped, a phone number grouped otherwise. Record ids are kept as
// they are: they are what a person resolves the ticket with.
func NewEvidence(op ledger.Operation, lookup Lookup, d Decision) Evidence {
	recipients := []string{op.Recipient}
	if lookup.Query != nil {
		recipients = append(recipients, lookup.Query.Recipient)
	}
	for _, r := range lookup.Outcome.Records() {
		recipients = append(recipients, r.Recipient)
	}
	redact := func(s string) string { return providers.RedactText(s, recipients...) }

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
		Detail:          redact(d.Detail),
	}
	for _, e := range lookup.Errors {
		e.Class, e.Error = redact(e.Class), redact(e.Error)
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
	for _, r := range lookup.Outcome.Records() {
		ev.Records = append(ev.Records, EvidenceRecord{
			ID:              r.ID,
			CreatedAt:       r.CreatedAt,
			RecipientMasked: MaskRecipient(r.Recipient),
			Fields:          redactFields(maskFields(r.Fields), redact),
			PayloadHash:     r.PayloadHash,
			// Redacted before it is cut: a recipient cut in half would no
			// longer be found.
			Excerpt: truncate(redact(r.Excerpt), 200),
			State:   r.State,
			Status:  truncate(redact(r.Status), 60),
		})
	}
	return ev
}

// redactFields applies redact to every string and key of masked fields
// (maskFields' result: maps, slices and scalars of JSON's kinds).
func redactFields(fields map[string]any, redact func(string) string) map[string]any {
	if fields == nil {
		return nil
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		out[redact(k)] = redactValue(v, redact)
	}
	return out
}

func redactValue(v any, redact func(string) string) any {
	switch t := v.(type) {
	case string:
		return redact(t)
	case json.Number:
		if r := redact(t.String()); r != t.String() {
			return r
		}
		return t
	case map[string]any:
		return redactFields(t, redact)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = redactValue(e, redact)
		}
		return out
	}
	return v
}

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

// maskFields copies a record's normalized fields, masking every string that
// looks like an address or a phone number.
func maskFields(fields map[string]any) map[string]any {
	if fields == nil {
		return nil
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		out[k] = maskValue(v)
	}
	return out
}

func maskValue(v any) any {
	switch t := v.(type) {
	case string:
		switch {
		case looksPersonal(t):
			return MaskRecipient(t)
		case isFreeText(t):
			// A message body, a name, an address: its hash and length are
			// evidence enough, its words may be personal data.
			sum := sha256.Sum256([]byte(t))
			return fmt.Sprintf("[text: %d characters, sha256 %s…]", utf8.RuneCountInString(t), hex.EncodeToString(sum[:6]))
		}
		return t
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
		return maskFields(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = maskValue(e)
		}
		return out
	case nil, bool, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return v
	}
	// A typed value ([]string, map[string]string, a struct, a named string
	// type) would carry its strings past the cases above unmasked: mask its
	// JSON form, which is what the evidence holds anyway.
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil
	}
	return maskValue(generic)
}

// isFreeText spots prose rather than a code, an amount or an id: anything
// with a space, or longer than 64 characters.
func isFreeText(s string) bool {
	return strings.ContainsAny(s, " \t\n") || utf8.RuneCountInString(s) > 64
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
