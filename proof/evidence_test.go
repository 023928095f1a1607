package proof_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

func TestMaskRecipient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		in   string
		want string
	}{
		{desc: "email", in: "jane.doe@example.com", want: "j***@***.com"},
		{desc: "email with surrounding space and capitals", in: "  Jane.Doe@Example.COM\n", want: "J***@***.COM"},
		{desc: "email with a one-letter local part", in: "a@example.com", want: "*@***.com"},
		{desc: "email without a dot in the domain", in: "jane@localhost", want: "j***@***"},
		{desc: "email on a subdomain", in: "jane@mail.example.co.uk", want: "j***@***.uk"},
		{desc: "email with an empty domain name", in: "jane@.com", want: "j***@***.com"},
		{desc: "unicode email", in: "jürgen.müller@bücher.de", want: "j***@***.de"},
		{desc: "unicode email starting with a multibyte letter", in: "Ülkü@Örnek.com.tr", want: "Ü***@***.tr"},
		{desc: "unicode email of single letters", in: "ü@ö.de", want: "*@***.de"},
		{desc: "E.164 phone", in: "+15550100777", want: "+1******0777"},
		{desc: "long phone", in: "+441632960961", want: "+4*******0961"},
		{desc: "phone with spaces", in: "+1 555 0100", want: "+1******100"},
		{desc: "seven-digit phone", in: "5550100", want: "5****00"},
		{desc: "customer id", in: "cus_4QFJOjw2Xy", want: "cu********w2Xy"},
		{desc: "five characters", in: "12345", want: "1***5"},
		{desc: "six characters", in: "ABC123", want: "A***23"},
		{desc: "four characters", in: "1234", want: "****"},
		{desc: "one character", in: "x", want: "*"},
		{desc: "empty", in: "", want: ""},
		{desc: "only space", in: " \t ", want: ""},
		{desc: "unicode name", in: "日本語の名前です", want: "日****前です"},
		{desc: "short unicode", in: "東京", want: "**"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := proof.MaskRecipient(tt.in); got != tt.want {
				t.Errorf("MaskRecipient(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestMaskRecipientHides checks the property behind the table on many
// generated addresses: the masked form never holds the whole local part of
// an email, nor the whole of a number, and never more than half of a
// number's characters.
func TestMaskRecipientHides(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20261129, 1))
	pick := func(alphabet []rune, n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	localRunes := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-üßéø日本")
	domainRunes := []rune("abcdefghijklmnopqrstuvwxyz0123456789-ü")
	digits := []rune("0123456789")
	otherRunes := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-äöü日本語")

	for range 2000 {
		local := pick(localRunes, 2+rng.IntN(20))
		domain := pick(domainRunes, 1+rng.IntN(12)) + "." + pick([]rune("abcdefghijklmnopqrstuvwxyz"), 2+rng.IntN(4))
		email := local + "@" + domain
		masked := proof.MaskRecipient(email)
		maskedLocal, _, ok := strings.Cut(masked, "@")
		if !ok {
			t.Fatalf("MaskRecipient(%q) = %q: the @ is gone, a person cannot tell it is an email", email, masked)
		}
		if strings.Contains(maskedLocal, local) || strings.Contains(masked, email) {
			t.Fatalf("MaskRecipient(%q) = %q holds the local part %q", email, masked, local)
		}

		number := pick(digits, 5+rng.IntN(11))
		if rng.IntN(2) == 0 {
			number = "+" + number
		}
		checkNumberMasked(t, number)
		checkNumberMasked(t, pick(otherRunes, 5+rng.IntN(20)))
	}
}

func checkNumberMasked(t *testing.T, s string) {
	t.Helper()
	masked := proof.MaskRecipient(s)
	if strings.Contains(masked, s) {
		t.Fatalf("MaskRecipient(%q) = %q holds the whole value", s, masked)
	}
	n := utf8.RuneCountInString(s)
	if got := utf8.RuneCountInString(masked); got != n {
		t.Fatalf("MaskRecipient(%q) = %q: %d characters, want %d", s, masked, got, n)
	}
	if shown := n - strings.Count(masked, "*"); shown > n/2 {
		t.Fatalf("MaskRecipient(%q) = %q shows %d of %d characters, more than half", s, masked, shown, n)
	}
}

func TestHashRecipient(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("jane.doe@example.com"))
	want := hex.EncodeToString(sum[:])
	for _, in := range []string{"jane.doe@example.com", "Jane.Doe@Example.COM", "  jane.doe@example.com\t\n", " JANE.DOE@EXAMPLE.COM "} {
		if got := proof.HashRecipient(in); got != want {
			t.Errorf("HashRecipient(%q) = %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"john.doe@example.com", "jane.doe@example.co", "+15550100777", "jane.doe+x@example.com"} {
		got := proof.HashRecipient(in)
		if got == want {
			t.Errorf("HashRecipient(%q) = HashRecipient(jane.doe@example.com)", in)
		}
		if len(got) != 64 || strings.Trim(got, "0123456789abcdef") != "" {
			t.Errorf("HashRecipient(%q) = %q, want 64 lowercase hex characters", in, got)
		}
	}
	if got := proof.HashRecipient("  "); got != "" {
		t.Errorf("HashRecipient of a blank recipient = %q, want empty (nothing to match)", got)
	}
}

// email, phone and the phone as a person writes it: none of them may appear
// in evidence, in any case.
var rawRecipients = []string{"jane.doe@example.com", "+15550100777", "5550100777", "+1 (555) 010-0777"}

// personalFields are a record's normalized fields holding the recipient
// everywhere a provider could put it.
func personalFields() map[string]any {
	return map[string]any{
		"to":       "jane.doe@example.com",
		"template": "welcome",
		"amount":   1299,
		"sms": map[string]any{
			"number": "+15550100777",
			"cc":     []any{"Jane.Doe@Example.com", map[string]any{"phone": "+1 (555) 010-0777"}, 42.5},
		},
		// Typed containers, as an adapter building Fields in Go (not from
		// decoded JSON) would write them.
		"bcc":      []string{"jane.doe@example.com"},
		"headers":  map[string]string{"Reply-To": "jane.doe@example.com", "X-Campaign": "spring"},
		"contacts": []map[string]any{{"phone": "+15550100777"}},
		"notify":   struct{ Phone string }{Phone: "+15550100777"},
	}
}

func TestNewEvidence(t *testing.T) {
	t.Parallel()
	first := time.Date(2026, 11, 29, 10, 0, 0, 123456000, time.UTC)
	lookedUp := first.Add(20 * time.Minute)
	op := ledger.Operation{
		ID: 5, OpKey: "welcome:u-981", Workflow: "onboarding", Provider: "mailer", Action: "send_email",
		Recipient: "jane.doe@example.com", PayloadHash: strings.Repeat("a", 64),
		Payload: json.RawMessage(`{"to":"jane.doe@example.com","template":"welcome"}`), Status: ledger.StatusPending,
		Attempts: 2, FirstAttemptAt: first, LastAttemptAt: first.Add(time.Minute),
	}
	records := []providers.Record{
		{ID: "msg_1", CreatedAt: first.Add(time.Second), Recipient: "+15550100777", PayloadHash: strings.Repeat("b", 64),
			Fields: personalFields(), Excerpt: "mailer id=msg_1"},
		{ID: "msg_2", Recipient: "JANE.DOE@example.com", PayloadHash: strings.Repeat("c", 64),
			Excerpt: strings.Repeat("é", 250)},
	}
	lookup := proof.LookupReport{
		Adapter: "http",
		Query: &providers.Query{OpKey: op.OpKey, Recipient: "Jane.Doe@Example.com", Action: op.Action,
			PayloadHash: op.PayloadHash, Since: first.Add(-time.Hour), Until: lookedUp},
		Outcome: proof.Answered(proof.SearchFor(op, providers.Matching{ByKey: true}, lookedUp), records),
		Errors: []proof.AttemptError{
			{At: first.Add(5 * time.Minute), Attempt: 1, Class: "transient", Error: "mailer: HTTP 503"},
			{At: first.Add(10 * time.Minute), Attempt: 2, Class: "rate_limited", Error: "mailer: HTTP 429"},
		},
		At: lookedUp,
	}
	d := proof.Decide(op, lookup.Outcome)
	ev := proof.NewEvidence(op, lookup, d)

	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	lower := strings.ToLower(string(raw))
	for _, r := range rawRecipients {
		if strings.Contains(lower, strings.ToLower(r)) {
			t.Errorf("evidence JSON holds the raw recipient %q:\n%s", r, raw)
		}
	}
	for _, s := range []string{`"welcome:u-981"`, `"msg_1"`, `"msg_2"`, strings.Repeat("a", 64), strings.Repeat("b", 64),
		strings.Repeat("c", 64), "mailer: HTTP 503", "mailer: HTTP 429", `"2026-11-29T09:00:00.123456Z"`,
		`"2026-11-29T10:20:00.123456Z"`, proof.HashRecipient("jane.doe@example.com"), `"multiple_matches"`} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("evidence JSON lacks %s:\n%s", s, raw)
		}
	}

	var got proof.Evidence
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Records {
		blankDigests(r.Fields)
	}
	blankDigests(got.Payload)
	// The recipients compare as the proof rule compares them: letter case
	// aside, msg_2's is the row's; msg_1's is another.
	yes, no := true, false
	want := proof.Evidence{
		OpKey: "welcome:u-981", Workflow: "onboarding", Provider: "mailer", Action: "send_email",
		RecipientMasked: "j***@***.com", RecipientHash: proof.HashRecipient("jane.doe@example.com"),
		PayloadHash: strings.Repeat("a", 64), Attempts: 2, FirstAttemptAt: first, LastAttemptAt: first.Add(time.Minute),
		Adapter: "http",
		Query: &proof.EvidenceQuery{OpKey: "welcome:u-981", RecipientMasked: "J***@***.com", Action: "send_email",
			PayloadHash: strings.Repeat("a", 64), Since: first.Add(-time.Hour), Until: lookedUp},
		Records: []proof.EvidenceRecord{
			{ID: "msg_1", CreatedAt: first.Add(time.Second), RecipientMasked: "+1******0777", RecipientAgrees: &no,
				PayloadHash: strings.Repeat("b", 64), Excerpt: "mailer id=msg_1",
				Fields: map[string]any{
					"to":       textJSON("jane.doe@example.com", true, "j***@***.com"),
					"template": textJSON("welcome", true, ""),
					"amount":   1299.0,
					"sms": map[string]any{
						"number": textJSON("+15550100777", false, "+1******0777"),
						"cc": []any{textJSON("Jane.Doe@Example.com", false, "J***@***.com"),
							map[string]any{"phone": textJSON("+1 (555) 010-0777", false, "+1***********0777")}, 42.5},
					},
					"bcc":      []any{textJSON("jane.doe@example.com", false, "j***@***.com")},
					"headers":  map[string]any{"Reply-To": textJSON("jane.doe@example.com", false, "j***@***.com"), "X-Campaign": textJSON("spring", false, "")},
					"contacts": []any{map[string]any{"phone": textJSON("+15550100777", false, "+1******0777")}},
					"notify":   map[string]any{"Phone": textJSON("+15550100777", false, "+1******0777")},
				}},
			{ID: "msg_2", RecipientMasked: "J***@***.com", RecipientAgrees: &yes, PayloadHash: strings.Repeat("c", 64),
				Excerpt: strings.Repeat("é", 200) + "…"},
		},
		Errors:     lookup.Errors,
		LookedUpAt: lookedUp,
		// The ledger's payload as the records' fields are kept, compared
		// with nothing.
		Payload: map[string]any{
			"to":       map[string]any{"digest": "", "length": 20.0, "agrees": nil, "masked": "j***@***.com"},
			"template": map[string]any{"digest": "", "length": 7.0, "agrees": nil},
		},
		Reason: proof.ReasonMultipleMatches,
		Detail: d.Detail,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evidence mismatch (-want +got):\n%s", diff)
	}
}

// blankDigests empties every digest of evidence fields decoded from JSON:
// a snapshot's key is its own, so a test compares the rest, and checks
// digests apart (TestEvidenceDigestsAreTheSnapshots).
func blankDigests(v any) {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["digest"]; ok {
			t["digest"] = ""
		}
		for _, e := range t {
			blankDigests(e)
		}
	case []any:
		for _, e := range t {
			blankDigests(e)
		}
	}
}

// textJSON is a string field's [proof.FieldText] as decoded from the
// evidence JSON, its digest blanked.
func textJSON(s string, agrees bool, masked string) map[string]any {
	m := map[string]any{"digest": "", "length": float64(utf8.RuneCountInString(s)), "agrees": agrees}
	if masked != "" {
		m["masked"] = masked
	}
	return m
}

// TestNewEvidenceWithoutLookup is the evidence of a lookup that never
// answered: no query, no records, but empty lists rather than nulls so that
// a reader can tell "none" from "not recorded".
func TestNewEvidenceWithoutLookup(t *testing.T) {
	t.Parallel()
	op := ledger.Operation{OpKey: "k", Workflow: "wf", Provider: "sms", Action: "send_sms", Recipient: "+15550100777",
		PayloadHash: strings.Repeat("d", 64), Attempts: 1}
	out := proof.Failed("sms: HTTP 503 until the lookup budget ran out")
	ev := proof.NewEvidence(op, proof.LookupReport{Outcome: out}, proof.Decide(op, out))
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"records": `[]`, "errors": `[]`, "reason": `"lookup_failed"`,
		"detail":           `"sms: HTTP 503 until the lookup budget ran out"`,
		"recipient_masked": `"+1******0777"`,
	} {
		if got := string(fields[key]); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	for _, key := range []string{"query", "last_attempt_at", "adapter", "differing_fields"} {
		if v, ok := fields[key]; ok {
			t.Errorf("%s = %s, want it left out", key, v)
		}
	}
	if strings.Contains(string(raw), "15550100777") {
		t.Errorf("evidence JSON holds the raw recipient:\n%s", raw)
	}
}

// TestEvidenceHidesFreeTextAndNumericPhones: a message body in a record's
// fields is reduced to its length and hash — and so is every other string,
// even a currency code — and a phone number stored as a JSON number is
// masked.
func TestEvidenceHidesFreeTextAndNumericPhones(t *testing.T) {
	t.Parallel()
	op := ledger.Operation{OpKey: "k", Provider: "p", Action: "send_sms", PayloadHash: strings.Repeat("a", 64)}
	rec := providers.Record{ID: "SM1", Fields: map[string]any{
		"body":     "Hi Jane, your code is 481516",
		"to":       float64(15550100777),
		"amount":   float64(1299),
		"currency": "usd",
	}}
	ev := proof.NewEvidence(op, proof.LookupReport{Outcome: proof.Answered(providers.Query{}, []providers.Record{rec})}, proof.Decision{})
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"Jane", "481516", "15550100777"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("evidence holds %q: %s", leak, b)
		}
	}
	fields := ev.Records[0].Fields
	body, _ := fields["body"].(proof.FieldText)
	currency, _ := fields["currency"].(proof.FieldText)
	if fields["amount"] != float64(1299) || currency.Length != 3 || body.Length != 28 || len(body.Digest) != 12 || body.Agrees != nil {
		t.Errorf("fields = %v", fields)
	}
}

// TestEvidenceRedactsEveryFormOfTheRecipient: whatever an adapter, a
// provider or the decision quoted — in an error, the detail, an excerpt, a
// field, the op_key — the operation's recipient and every record's appear
// in no letter case, no escaping and no grouping of a phone number's digits.
func TestEvidenceRedactsEveryFormOfTheRecipient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc       string
		op, record string // the operation's recipient, a record's
		other      string // another record's recipient
		quoted     []string
		kept       []string // what must survive the redaction
		leaks      func(text string) []string
	}{
		{
			desc: "an email address", op: "Jane.Doe@Example.com", record: "JANE.DOE@EXAMPLE.COM", other: "j.doe@example.org",
			quoted: []string{"JANE.DOE@EXAMPLE.COM", "jane.doe@example.com", "jane.doe%40example.com", "Jane.Doe%40Example.com", "J.DOE@example.ORG"},
			kept:   []string{"mailer: HTTP 404 no mailbox [redacted]"},
			leaks: func(text string) []string {
				var found []string
				for _, form := range []string{"jane.doe", "j.doe@", "j.doe%40"} {
					if strings.Contains(strings.ToLower(text), form) {
						found = append(found, form)
					}
				}
				return found
			},
		},
		{
			desc: "a phone number", op: "+1 (555) 0100-777", record: "+15550100777", other: "+44 20 7946 0958",
			quoted: []string{"+1(555)0100-777", "15550100777", "555-0100-777", "+1 555 0100 777", "%2B15550100777", "+442079460958", "020 7946 0958"},
			kept:   []string{"mailer: HTTP 404 no mailbox [redacted]"},
			leaks: func(text string) []string {
				var found []string
				for _, run := range regexp.MustCompile(`[0-9][0-9 ()+\-./]*[0-9]`).FindAllString(text, -1) {
					digits := strings.Map(func(r rune) rune {
						if r >= '0' && r <= '9' {
							return r
						}
						return -1
					}, run)
					if strings.Contains(digits, "0100777") || strings.Contains(digits, "7946095") {
						found = append(found, run)
					}
				}
				return found
			},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			q := tc.quoted
			at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			op := ledger.Operation{
				ID: 7, OpKey: "welcome:" + q[1], Workflow: "onboarding", Provider: "mailer", Action: "send",
				Recipient: tc.op, PayloadHash: strings.Repeat("a", 64), Attempts: 3, FirstAttemptAt: at,
			}
			records := []providers.Record{
				{ID: "msg_1", CreatedAt: at, Recipient: tc.record, PayloadHash: strings.Repeat("b", 64),
					Fields:  map[string]any{"note": "tel:" + q[0], "to=" + q[2]: true, "list": []any{"cc:" + q[3]}},
					Excerpt: "delivered to " + q[0] + " " + strings.Repeat("x", 180) + q[1]},
				{ID: "msg_2", CreatedAt: at, Recipient: tc.other, PayloadHash: strings.Repeat("c", 64),
					Excerpt: "forwarded to " + q[len(q)-1]},
			}
			lookup := proof.LookupReport{
				Adapter: "http",
				Query:   &providers.Query{OpKey: op.OpKey, Recipient: tc.op, Action: op.Action, Since: at, Until: at.Add(time.Hour)},
				Outcome: proof.Answered(providers.Query{}, records),
				Errors: []proof.AttemptError{
					{At: at, Attempt: 1, Class: "permanent", Error: "mailer: HTTP 404 no mailbox " + q[0]},
					{At: at, Attempt: 2, Class: "transient", Error: "GET /lookup?recipient=" + q[2] + "&op_key=x: timeout"},
					{At: at, Attempt: 3, Class: "transient", Error: "bounced by " + q[len(q)-2] + "; " + q[3]},
				},
				At: at.Add(time.Hour),
			}
			d := proof.Decision{Reason: proof.ReasonMultipleMatches,
				Detail:          "records msg_1 (" + q[1] + ") and msg_2 (" + q[len(q)-1] + ")",
				DifferingFields: []string{"to:" + q[0]}}

			before := append([]proof.AttemptError(nil), lookup.Errors...)
			raw, err := json.Marshal(proof.NewEvidence(op, lookup, d))
			if err != nil {
				t.Fatal(err)
			}
			if leaks := tc.leaks(string(raw)); len(leaks) > 0 {
				t.Errorf("evidence JSON holds the recipient as %q:\n%s", leaks, raw)
			}
			for _, s := range append(tc.kept, `"msg_1"`, `"msg_2"`, "[redacted]") {
				if !strings.Contains(string(raw), s) {
					t.Errorf("evidence JSON lacks %q:\n%s", s, raw)
				}
			}
			if diff := cmp.Diff(before, lookup.Errors); diff != "" {
				t.Errorf("NewEvidence changed the caller's errors (-before +after):\n%s", diff)
			}
		})
	}
}

// TestEvidenceKeepsNoProviderText: a one-time code, a login link and a
// message body in a record's fields — or quoted by a careless adapter in
// its excerpt and status, or by the provider in an error and the
// decision's detail — are nowhere in
// the stored evidence. Each string field is its hash, its length and
// whether it agrees with the ledger's payload; numbers and booleans stay.
func TestEvidenceKeepsNoProviderText(t *testing.T) {
	t.Parallel()
	const (
		code = "G-482913"
		link = "https://acme.example/l/9fQ2xZ7kLmN0pR"
		body = "Your Acme code is G-482913. Or sign in: https://acme.example/l/9fQ2xZ7kLmN0pR"
	)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	op := ledger.Operation{ID: 9, OpKey: "login:u-77", Workflow: "login", Provider: "sms", Action: "send_sms",
		Recipient: "+15550100777", PayloadHash: strings.Repeat("a", 64), Attempts: 1, FirstAttemptAt: at,
		Payload: json.RawMessage(`{"body":"` + body + `","code":"` + code + `","link":"https://acme.example/l/other","amount":1299,
			"meta":{"lang":"en"}}`)}
	rec := providers.Record{ID: "SM1", CreatedAt: at, Recipient: "+15550100777", PayloadHash: strings.Repeat("b", 64),
		State: providers.StateFailed, Status: code,
		Fields: map[string]any{"body": body, "code": code, "link": link, "amount": 1299, "sent": true,
			"extra": "not in the ledger", "meta": map[string]any{"lang": "en", "tags": []any{code, 7}}},
		Excerpt: "sms message status=undelivered code=g-482913 see https://acme.example/l/other and " + link}
	lookup := proof.LookupReport{Adapter: "twilio", Outcome: proof.Answered(providers.Query{}, []providers.Record{rec}),
		Errors: []proof.AttemptError{{At: at, Attempt: 1, Class: "permanent", Error: "sms: HTTP 400: body " + body + " refused"}},
		At:     at.Add(time.Hour)}
	// The decision's detail quoting the error, as an exhausted budget's
	// does ("last: …").
	detail := "3 attempt(s) failed within lookup_budget 1h0m0s; last: sms: HTTP 400: body " + body + " refused"
	evidence := proof.NewEvidence(op, lookup, proof.Decision{Reason: proof.ReasonPayloadMismatch, Detail: detail})
	raw, err := json.Marshal(evidence)
	if err != nil {
		t.Fatal(err)
	}
	if want := "3 attempt(s) failed within lookup_budget 1h0m0s; last: sms: HTTP 400: body [redacted] refused"; evidence.Detail != want {
		t.Errorf("detail = %q, want %q", evidence.Detail, want)
	}
	for _, leak := range []string{"482913", "9fq2xz7klmn0pr", "acme.example", "your acme code", "not in the ledger"} {
		if strings.Contains(strings.ToLower(string(raw)), leak) {
			t.Errorf("evidence JSON holds %q:\n%s", leak, raw)
		}
	}

	var ev struct {
		Records []struct {
			State   string         `json:"state"`
			Status  string         `json:"status"`
			Fields  map[string]any `json:"fields"`
			Excerpt string         `json:"excerpt"`
		} `json:"records"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	text := func(s string, agrees any) map[string]any {
		return map[string]any{"digest": "", "length": float64(utf8.RuneCountInString(s)), "agrees": agrees}
	}
	blankDigests(ev.Records[0].Fields)
	want := map[string]any{
		"body":   text(body, true),
		"code":   text(code, true),
		"link":   text(link, false),
		"extra":  text("not in the ledger", false),
		"amount": 1299.0,
		"sent":   true,
		"meta":   map[string]any{"lang": text("en", true), "tags": []any{text(code, false), 7.0}},
	}
	if diff := cmp.Diff(want, ev.Records[0].Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if got := ev.Records[0].State; got != "failed" {
		t.Errorf("state = %q, want failed", got)
	}
	if got, want := ev.Records[0].Excerpt, "sms message status=undelivered code=[redacted] see [link] and [link]"; got != want {
		t.Errorf("excerpt = %q, want %q", got, want)
	}

	// Without a payload in the ledger there is nothing to agree with.
	op.Payload = nil
	ev2 := proof.NewEvidence(op, lookup, proof.Decision{})
	if got := ev2.Records[0].Fields["code"]; !cmp.Equal(got, proof.FieldText{Length: 8}, cmpopts.IgnoreFields(proof.FieldText{}, "Digest")) {
		t.Errorf("code without a ledger payload = %#v, want its hash and length, agrees null", got)
	}
}

// TestEvidenceDigestsAreTheSnapshots: within one snapshot the same text has
// one digest and another text another — two records holding one body show
// it — but a digest is not the text's plain SHA-256 (which would give a
// six-digit code away to anyone hashing the million candidates), and two
// snapshots of the same text do not share one.
func TestEvidenceDigestsAreTheSnapshots(t *testing.T) {
	t.Parallel()
	const code = "482913"
	op := ledger.Operation{OpKey: "k", Provider: "sms", Action: "send_sms", PayloadHash: strings.Repeat("a", 64)}
	records := []providers.Record{{ID: "SM1", Fields: map[string]any{"code": code}}, {ID: "SM2", Fields: map[string]any{"code": code, "other": "482914"}}}
	lookup := proof.LookupReport{Outcome: proof.Answered(providers.Query{}, records)}
	digestOf := func(ev proof.Evidence, i int, key string) string {
		f, ok := ev.Records[i].Fields[key].(proof.FieldText)
		if !ok || len(f.Digest) != 12 {
			t.Fatalf("record %d field %s = %#v, want a FieldText with a 12-digit digest", i, key, ev.Records[i].Fields[key])
		}
		return f.Digest
	}
	first, second := proof.NewEvidence(op, lookup, proof.Decision{}), proof.NewEvidence(op, lookup, proof.Decision{})
	sum := sha256.Sum256([]byte(code))
	plain := hex.EncodeToString(sum[:6])
	switch d := digestOf(first, 0, "code"); {
	case d != digestOf(first, 1, "code"):
		t.Errorf("one text, two digests in one snapshot")
	case d == digestOf(first, 1, "other"):
		t.Errorf("two texts, one digest")
	case d == plain:
		t.Errorf("the digest is the plain SHA-256 of the code")
	case d == digestOf(second, 0, "code"):
		t.Errorf("two snapshots share a digest")
	}
}

// TestEvidenceDetailKeepsItsNames: the detail's op_keys and record ids
// stay whole where a text of the payload is part of one; the same text
// anywhere else in the detail is still redacted.
func TestEvidenceDetailKeepsItsNames(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	op := ledger.Operation{ID: 3, OpKey: "signup-4711-welcome", Workflow: "signup", Provider: "email", Action: "send_email",
		Recipient: "jane@example.com", PayloadHash: strings.Repeat("a", 64), Attempts: 1, FirstAttemptAt: at,
		Payload: json.RawMessage(`{"template":"welcome"}`)}
	d := proof.Decision{Reason: proof.ReasonAmbiguousOwner, Candidates: []string{"signup-4711-welcome-retry"}, RecordIDs: []string{"msg_welcome_1"},
		Detail: "record msg_welcome_1 agrees, but could as well be signup-4711-welcome-retry's; template welcome"}
	evidence := proof.NewEvidence(op, proof.LookupReport{Adapter: "postmark", Outcome: proof.Answered(providers.Query{}, nil), At: at}, d)
	if want := "record msg_welcome_1 agrees, but could as well be signup-4711-welcome-retry's; template [redacted]"; evidence.Detail != want {
		t.Errorf("detail = %q, want %q", evidence.Detail, want)
	}
}
