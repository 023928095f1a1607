package message

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

var updateGolden = flag.Bool("update", false, "rewrite notify/message/testdata/*.golden.json")

// The raw recipients of the fixtures: they are in the operations, the
// providers' records, their excerpts and fields, and some details, and must
// reach no message.
const (
	rawEmail = "jane.doe@example.com"
	rawPhone = "+15550100777"
)

var renderT0 = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

// renderFixture is an operation and its lookup, from which a ticket and its
// evidence are built the way the lookup job builds them.
type renderFixture struct {
	op      ledger.Operation
	records []providers.Record
	outcome func([]providers.Record) proof.Outcome
	errors  []proof.AttemptError
	// ledgerSays replaces the decision, for what only the ledger can
	// tell (another operation's claim on the record).
	ledgerSays func(proof.Decision) proof.Decision
}

func emailOperation() ledger.Operation {
	return ledger.Operation{
		ID: 7, OpKey: "welcome:cus_8842:v1", Workflow: "welcome-email", Provider: "sendgrid", Action: "send_email",
		Recipient: rawEmail, PayloadHash: "9f2c4e", Payload: json.RawMessage(`{"subject":"Welcome","template":"w1"}`),
		Status: ledger.StatusPending, Attempts: 2, FirstAttemptAt: renderT0.Add(-2 * time.Hour),
		LastAttemptAt: renderT0.Add(-90 * time.Minute),
	}
}

func emailRecord(id, hash, subject string) providers.Record {
	return providers.Record{
		ID: id, CreatedAt: renderT0.Add(-100 * time.Minute), Recipient: rawEmail,
		Fields:      map[string]any{"subject": subject, "template": "w1", "to": rawEmail},
		PayloadHash: hash, Excerpt: "to=" + rawEmail + " subject=" + subject,
	}
}

// inState is r as the provider reports it in state, in its own word.
func inState(r providers.Record, state providers.State, status string) providers.Record {
	r.State, r.Status = state, status
	return r
}

func answered(records []providers.Record) proof.Outcome {
	return proof.Answered(providers.Query{}, records)
}

// ticketAndEvidence decides the fixture's lookup and opens its ticket.
func (f renderFixture) ticketAndEvidence(t *testing.T) (review.Ticket, proof.Evidence) {
	t.Helper()
	out := f.outcome(f.records)
	if out.Searched() {
		out = proof.Answered(proof.SearchFor(f.op, providers.Matching{ByKey: true}, renderT0), out.Records())
	}
	d := proof.Decide(f.op, out)
	if f.ledgerSays != nil {
		d = f.ledgerSays(d)
	}
	if d.Done {
		t.Fatalf("fixture for %s decides done; a ticket needs a review decision", f.op.OpKey)
	}
	ev := proof.NewEvidence(f.op, proof.LookupReport{
		Adapter: "http", Query: &providers.Query{OpKey: f.op.OpKey, Recipient: f.op.Recipient, Action: f.op.Action},
		Outcome: f.outcome(f.records), Errors: f.errors, At: renderT0.Add(-5 * time.Minute),
	}, d)
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return review.Ticket{
		ID: 42, OperationID: f.op.ID, OpKey: f.op.OpKey, Reason: d.Reason, Owner: "U012AB3CD", Priority: "normal",
		State: review.StateOpen, Deadline: renderT0.Add(4 * time.Hour), Evidence: raw, Version: 1,
		CreatedAt: renderT0, UpdatedAt: renderT0,
	}, ev
}

func fixtureFor(reason proof.Reason) renderFixture {
	op := emailOperation()
	switch reason {
	case proof.ReasonNotFound:
		return renderFixture{op: op, outcome: answered}
	case proof.ReasonMultipleMatches:
		return renderFixture{op: op, outcome: answered, records: []providers.Record{
			emailRecord("msg_01HQ", op.PayloadHash, "Welcome"), emailRecord("msg_01HR", op.PayloadHash, "Welcome"),
		}}
	case proof.ReasonPayloadMismatch:
		return renderFixture{op: op, outcome: answered, records: []providers.Record{
			emailRecord("msg_01HQ", "77aa01", "Welcome back"),
		}}
	case proof.ReasonAmbiguousOwner:
		return renderFixture{op: op, outcome: answered, records: []providers.Record{
			emailRecord("msg_01HQ", op.PayloadHash, "Welcome"),
		}, ledgerSays: func(d proof.Decision) proof.Decision {
			return proof.Decision{Reason: proof.ReasonAmbiguousOwner, RecordIDs: d.RecordIDs,
				Candidates: []string{"signup-4711-welcome-retry"},
				Detail:     "record msg_01HQ agrees, but was found by resemblance and could as well be signup-4711-welcome-retry's"}
		}}
	case proof.ReasonLookupFailed:
		// An SMS this time, and a detail that echoes the recipient, as a
		// careless provider error might.
		op.Workflow, op.Provider, op.Action, op.OpKey = "otp-sms", "twilio", "send_sms", "otp:cus_8842:4711"
		op.Recipient = rawPhone
		return renderFixture{op: op,
			outcome: func([]providers.Record) proof.Outcome {
				return proof.Failed("3 attempts timed out; last: GET /Messages?To=" + rawPhone + " (cc " + rawEmail + ")")
			},
			errors: []proof.AttemptError{
				{At: renderT0.Add(-7 * time.Minute), Attempt: 1, Class: "timeout", Error: "context deadline exceeded"},
				{At: renderT0.Add(-6 * time.Minute), Attempt: 2, Class: "rate_limited", Error: "429"},
				{At: renderT0.Add(-5 * time.Minute), Attempt: 3, Class: "timeout", Error: "context deadline exceeded"},
			}}
	case proof.ReasonLookupUnsupported:
		op.Provider, op.Action = "legacy-smtp", "send_email"
		return renderFixture{op: op, outcome: func([]providers.Record) proof.Outcome {
			return proof.Unsupported("provider legacy-smtp (kind smtp) offers no search")
		}}
	case proof.ReasonInFlight:
		return renderFixture{op: op, outcome: answered, records: []providers.Record{
			inState(emailRecord("msg_01HQ", op.PayloadHash, "Welcome"), providers.StateInFlight, "scheduled"),
		}}
	case proof.ReasonProviderFailed:
		return renderFixture{op: op, outcome: answered, records: []providers.Record{
			inState(emailRecord("msg_01HQ", op.PayloadHash, "Welcome"), providers.StateFailed, "bounced"),
		}}
	case proof.ReasonProviderReversed:
		op.Workflow, op.Provider, op.Action, op.OpKey = "billing", "stripe", "charge", "invoice:cus_8842:2026-11"
		return renderFixture{op: op, outcome: answered, records: []providers.Record{
			inState(emailRecord("ch_3Q1", op.PayloadHash, "Invoice"), providers.StateReversed, "refunded 1299 of 1299"),
		}}
	case proof.ReasonDuplicateEffect, proof.ReasonEffectAfterFailed:
		records := []providers.Record{emailRecord("msg_01HQ", op.PayloadHash, "Welcome"),
			inState(emailRecord("msg_01HR", op.PayloadHash, "Welcome"), providers.StateEffect, "Sent")}
		op.Status, op.ProviderRecordID = ledger.StatusDone, "msg_01HQ"
		if reason == proof.ReasonEffectAfterFailed {
			records = records[:1]
			op.Status, op.ProviderRecordID = ledger.StatusFailed, ""
		}
		return renderFixture{op: op, outcome: answered, records: records, ledgerSays: func(proof.Decision) proof.Decision {
			f := proof.Audit(op, proof.SearchFor(op, providers.Matching{ByKey: true}, renderT0), records, nil)
			return proof.Decision{Reason: f.Reason, RecordIDs: f.RecordIDs, Detail: f.Detail}
		}}
	case proof.ReasonInvalidOperation:
		op.Provider = "fax"
		return renderFixture{op: op, outcome: func([]providers.Record) proof.Outcome {
			return proof.Invalid(`unknown provider "fax"`)
		}}
	}
	panic("no fixture for " + reason)
}

// renderCase is one golden file: the message a ticket renders to.
type renderCase struct {
	desc   string
	golden string
	render func(t *testing.T) Message
}

func renderCases() []renderCase {
	root := func(reason proof.Reason, edit func(*review.Ticket, *proof.Evidence)) func(t *testing.T) Message {
		return func(t *testing.T) Message {
			tk, ev := fixtureFor(reason).ticketAndEvidence(t)
			if edit != nil {
				edit(&tk, &ev)
			}
			return RootMessage(NewAlert(tk, ev))
		}
	}
	escalated := func(tk *review.Ticket, _ *proof.Evidence) {
		tk.EscalationLevel, tk.Owner, tk.Priority, tk.Version = 2, "U0LEAD42", "urgent", 3
		tk.Deadline = renderT0.Add(6 * time.Hour)
	}
	resolved := func(reason proof.Reason, outcome, by, recordID string) func(t *testing.T) Message {
		return func(t *testing.T) Message {
			tk, ev := fixtureFor(reason).ticketAndEvidence(t)
			tk.Version = 2
			return ResolvedMessage(NewAlert(tk, ev), outcome, by, recordID)
		}
	}
	reply := func(e EscalationEvent, edit func(*review.Ticket, *proof.Evidence), exhausted bool) func(t *testing.T) Message {
		return func(t *testing.T) Message {
			tk, ev := fixtureFor(proof.ReasonNotFound).ticketAndEvidence(t)
			edit(&tk, &ev)
			a := NewAlert(tk, ev)
			a.Exhausted = exhausted
			return EscalationReply(a, e)
		}
	}

	var cases []renderCase
	for _, reason := range proof.Reasons {
		cases = append(cases, renderCase{
			desc: "open ticket, reason " + string(reason), golden: "reason_" + string(reason),
			render: root(reason, nil),
		})
	}
	return append(cases,
		renderCase{desc: "urgent priority at level 2", golden: "urgent", render: root(proof.ReasonNotFound, escalated)},
		renderCase{desc: "acknowledged at its level: no Acknowledge button", golden: "acknowledged",
			render: root(proof.ReasonPayloadMismatch, func(tk *review.Ticket, _ *proof.Evidence) {
				level, at := 1, renderT0.Add(time.Hour)
				tk.EscalationLevel, tk.Priority, tk.Owner, tk.Version = 1, "high", "U0SECOND1", 4
				tk.AcknowledgedBy, tk.AcknowledgedAt, tk.AcknowledgedLevel = "U0ACK777", &at, &level
			})},
		renderCase{desc: "escalation exhausted: the root says so", golden: "exhausted_root",
			render: func(t *testing.T) Message {
				tk, ev := fixtureFor(proof.ReasonNotFound).ticketAndEvidence(t)
				escalated(&tk, &ev)
				a := NewAlert(tk, ev)
				a.Exhausted = true
				return RootMessage(a)
			}},
		renderCase{desc: "resolved done by a Slack user", golden: "resolved_done",
			render: resolved(proof.ReasonNotFound, review.ResolutionDone, "U0ACK777", "msg_01HZ")},
		renderCase{desc: "resolved not sent by a name from the CLI", golden: "resolved_not_sent",
			render: resolved(proof.ReasonNotFound, review.ResolutionNotSent, "ops-oncall", "")},
		renderCase{desc: "resolved duplicate lists the duplicates", golden: "resolved_duplicate",
			render: resolved(proof.ReasonMultipleMatches, review.ResolutionDuplicate, "U0ACK777", "msg_01HR")},
		renderCase{desc: "escalation reply, level 1 to 2", golden: "reply_escalated",
			render: reply(EscalationEvent{Kind: review.EscalationLevelUp, FromLevel: 1, ToLevel: 2}, escalated, false)},
		renderCase{desc: "repeat reply at the top level", golden: "reply_repeat",
			render: reply(EscalationEvent{Kind: review.EscalationRepeat, FromLevel: 2, ToLevel: 2, Repeat: 2}, escalated, false)},
		renderCase{desc: "exhausted reply", golden: "reply_exhausted",
			render: reply(EscalationEvent{Kind: review.EscalationExhausted, FromLevel: 2, ToLevel: 2,
				DedupeKey: "outbox:ticket:42:exhausted"}, escalated, true)},
		renderCase{desc: "escalation as a new root: the first alert never reached Slack", golden: "new_root_escalated",
			render: func(t *testing.T) Message {
				tk, ev := fixtureFor(proof.ReasonNotFound).ticketAndEvidence(t)
				escalated(&tk, &ev)
				a := NewAlert(tk, ev)
				event := EscalationReply(a, EscalationEvent{Kind: review.EscalationLevelUp, FromLevel: 1, ToLevel: 2})
				return NewRootMessage(a, Replacement{Why: NewRootUndelivered, Event: event.Text, DedupeKey: "ticket:42:escalated:2"})
			}},
		renderCase{desc: "a new root for one removed from Slack", golden: "new_root_removed",
			render: func(t *testing.T) Message {
				tk, ev := fixtureFor(proof.ReasonPayloadMismatch).ticketAndEvidence(t)
				return NewRootMessage(NewAlert(tk, ev), Replacement{Why: NewRootRemoved, DedupeKey: "ticket:42:slack_root_removed:1741964966.000100"})
			}},
		renderCase{desc: "ack timeout reply at the top level", golden: "reply_ack_timed_out",
			render: func(t *testing.T) Message {
				tk, ev := fixtureFor(proof.ReasonNotFound).ticketAndEvidence(t)
				escalated(&tk, &ev)
				return AckTimeoutReply(NewAlert(tk, ev), AckTimeoutEvent{Level: 2, By: "slack:U0ACK777", AckTimeout: 30 * time.Minute,
					DedupeKey: "ticket:42:ack_timed_out:1"})
			}},
		renderCase{desc: "hostile input is escaped and clipped", golden: "hostile", render: func(t *testing.T) Message {
			tk, ev := hostileTicket(t)
			return RootMessage(NewAlert(tk, ev))
		}},
		renderCase{desc: "hostile input in a reply", golden: "hostile_reply", render: func(t *testing.T) Message {
			tk, ev := hostileTicket(t)
			return EscalationReply(NewAlert(tk, ev), EscalationEvent{Kind: review.EscalationLevelUp, FromLevel: 0, ToLevel: 1})
		}},
		renderCase{desc: "12 records: five ids, then how many more", golden: "many_records", render: func(t *testing.T) Message {
			f := fixtureFor(proof.ReasonMultipleMatches)
			f.records = nil
			for i := range 12 {
				f.records = append(f.records, emailRecord("msg_"+string(rune('A'+i))+"0001", f.op.PayloadHash, "Welcome"))
			}
			tk, ev := f.ticketAndEvidence(t)
			return RootMessage(NewAlert(tk, ev))
		}},
	)
}

func hostileTicket(t *testing.T) (review.Ticket, proof.Evidence) {
	t.Helper()
	f := fixtureFor(proof.ReasonLookupFailed)
	f.op.Workflow = "<!channel> & co"
	f.op.OpKey = "key`with`backticks<@U999>\n*bold* <!here> &amp;"
	f.op.Action = strings.Repeat("a", 500)
	detail := "<!everyone> " + strings.Repeat("x&<>", 1250) // 5000 characters before escaping
	f.outcome = func([]providers.Record) proof.Outcome { return proof.Failed(detail) }
	tk, ev := f.ticketAndEvidence(t)
	tk.Owner = "<!channel>" // not a user id: shown as text
	tk.Priority = "<!here> very urgent"
	ev.DifferingFields = []string{"payload.<!subteam^S1>", strings.Repeat("f", 3000)}
	ev.RecipientMasked = "<@U999>"
	return tk, ev
}

// messageJSON is what the golden files hold: the message as Slack receives
// it, without Go's HTML escaping so that a reader sees the real characters.
func messageJSON(t *testing.T, m Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		t.Fatalf("marshal message: %v", err)
	}
	return unescapeHTML(buf.Bytes())
}

// unescapeHTML undoes Go's \u0026, \u003c and \u003e in JSON: slack-go
// marshals some parts of a block itself, with HTML escaping on.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if c, ok := map[string]byte{`\u0026`: '&', `\u003c`: '<', `\u003e`: '>'}[string(b[i:min(i+6, len(b))])]; ok {
			out = append(out, c)
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// incidentRenderCases are the messages of a provider incident; the
// dispatcher adds their metadata.
func incidentRenderCases() []renderCase {
	incident := Incident{ID: 7, Provider: "acme", StartedAt: renderT0, Waiting: 1400}
	ended := incident
	ended.EndedAt, ended.Settled, ended.Review = renderT0.Add(4*time.Minute+10*time.Second), 1380, 20
	return []renderCase{
		{desc: "provider incident, down", golden: "incident_down",
			render: func(*testing.T) Message { return IncidentMessage(incident) }},
		{desc: "provider incident, ended", golden: "incident_ended",
			render: func(*testing.T) Message { return IncidentMessage(ended) }},
		{desc: "provider incident, the reply at its end", golden: "incident_ended_reply",
			render: func(*testing.T) Message { return IncidentClosedReply(ended) }},
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range append(renderCases(), incidentRenderCases()...) {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			got := messageJSON(t, tc.render(t))
			path := filepath.Join("testdata", tc.golden+".golden.json")
			if *updateGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%s: %v (run go test ./notify/message -update to write it)", tc.desc, err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s: message differs from %s (-want +got):\n%s", tc.desc, path, diff)
			}
		})
	}
}

func TestRenderNoRawRecipient(t *testing.T) {
	t.Parallel()
	forbidden := []string{rawEmail, "jane.doe", "example.com", rawPhone, "5550100777"}
	for _, tc := range renderCases() {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m := tc.render(t)
			meta, err := json.Marshal(m.Metadata)
			if err != nil {
				t.Fatal(err)
			}
			for part, s := range map[string]string{"text": m.Text, "blocks and all": string(messageJSON(t, m)), "metadata": string(meta)} {
				for _, raw := range forbidden {
					if strings.Contains(s, raw) {
						t.Errorf("%s: %s holds %q", tc.desc, part, raw)
					}
				}
			}
		})
	}
}

// slackToken is every <…> sequence Slack would parse; the only ones a
// message may hold are the user mentions and dates it renders itself.
var (
	slackToken = regexp.MustCompile(`<[^>]*>`)
	ownTokens  = regexp.MustCompile(`^(<@[UW][A-Z0-9]+>|<!date\^\d+\^\{date_short_pretty\} \{time\}\|[0-9TZ:-]+>)$`)
)

func TestRenderNoInjectedMentions(t *testing.T) {
	t.Parallel()
	for _, tc := range renderCases() {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m := tc.render(t)
			texts := append([]string{m.Text}, mrkdwnTexts(m.Blocks)...)
			for _, s := range texts {
				for _, tok := range slackToken.FindAllString(s, -1) {
					if !ownTokens.MatchString(tok) {
						t.Errorf("%s: text holds %q, which Slack would parse", tc.desc, tok)
					}
				}
				if strings.Contains(s, "<@U999>") {
					t.Errorf("%s: an op_key's mention reached the message unescaped", tc.desc)
				}
			}
		})
	}
}

func TestRenderHostileEscaped(t *testing.T) {
	t.Parallel()
	tk, ev := hostileTicket(t)
	for _, m := range []Message{
		RootMessage(NewAlert(tk, ev)),
		EscalationReply(NewAlert(tk, ev), EscalationEvent{Kind: review.EscalationRepeat, ToLevel: 0, Repeat: 1}),
	} {
		all := string(messageJSON(t, m))
		for _, want := range []string{"&lt;!channel&gt; &amp; co", "&lt;@U999&gt;"} {
			if !strings.Contains(all, want) {
				t.Errorf("message lacks the escaped form %q:\n%s", want, all)
			}
		}
		if strings.Contains(all, "backticks<") || strings.Contains(all, "`with`") {
			t.Errorf("op_key's backticks or brackets survived:\n%s", all)
		}
	}
}

func TestRenderBlocksValid(t *testing.T) {
	t.Parallel()
	for _, tc := range renderCases() {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m := tc.render(t)
			if strings.TrimSpace(m.Text) == "" || utf8.RuneCountInString(m.Text) > maxFallbackText {
				t.Errorf("%s: fallback text has %d characters, want 1..%d", tc.desc, utf8.RuneCountInString(m.Text), maxFallbackText)
			}
			sent, err := json.Marshal(slack.Blocks{BlockSet: m.Blocks})
			if err != nil {
				t.Fatal(err)
			}
			var back slack.Blocks
			if err := json.Unmarshal(sent, &back); err != nil {
				t.Fatalf("%s: blocks do not parse back: %v", tc.desc, err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(sent), string(again)); diff != "" {
				t.Errorf("%s: blocks change in a round trip (-want +got):\n%s", tc.desc, diff)
			}
			for _, err := range checkBlocks(back.BlockSet) {
				t.Errorf("%s: %v", tc.desc, err)
			}
		})
	}
}

// checkBlocks applies slack-go's validation where it has one (text objects)
// and Block Kit's documented limits where it has none.
func checkBlocks(blocks []slack.Block) []error {
	var errs []error
	text := func(where string, o *slack.TextBlockObject, wantType string, limit int) {
		switch {
		case o == nil:
			errs = append(errs, fmt.Errorf("%s: no text", where))
			return
		case wantType != "" && o.Type != wantType:
			errs = append(errs, fmt.Errorf("%s: type %s, want %s", where, o.Type, wantType))
		case utf8.RuneCountInString(o.Text) > limit:
			errs = append(errs, fmt.Errorf("%s: %d characters, limit %d", where, utf8.RuneCountInString(o.Text), limit))
		}
		if err := o.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", where, err))
		}
	}
	if len(blocks) > 50 {
		errs = append(errs, fmt.Errorf("%d blocks, limit 50", len(blocks)))
	}
	blockIDs, actionIDs := map[string]bool{}, map[string]bool{}
	for i, b := range blocks {
		where := fmt.Sprintf("block %d (%s)", i, b.BlockType())
		if id := b.ID(); id != "" {
			if blockIDs[id] || len(id) > 255 {
				errs = append(errs, fmt.Errorf("%s: block_id %q repeated or too long", where, id))
			}
			blockIDs[id] = true
		}
		switch b := b.(type) {
		case *slack.HeaderBlock:
			text(where, b.Text, slack.PlainTextType, maxHeaderText)
		case *slack.SectionBlock:
			if b.Text == nil && len(b.Fields) == 0 {
				errs = append(errs, fmt.Errorf("%s: neither text nor fields", where))
			}
			if b.Text != nil {
				text(where+" text", b.Text, "", maxSectionText)
			}
			if len(b.Fields) > 10 {
				errs = append(errs, fmt.Errorf("%s: %d fields, limit 10", where, len(b.Fields)))
			}
			for j, f := range b.Fields {
				text(fmt.Sprintf("%s field %d", where, j), f, "", maxFieldText)
			}
		case *slack.ContextBlock:
			els := b.ContextElements.Elements
			if len(els) == 0 || len(els) > 10 {
				errs = append(errs, fmt.Errorf("%s: %d elements, want 1..10", where, len(els)))
			}
			for j, el := range els {
				o, ok := el.(*slack.TextBlockObject)
				if !ok {
					errs = append(errs, fmt.Errorf("%s element %d: %T", where, j, el))
					continue
				}
				text(fmt.Sprintf("%s element %d", where, j), o, "", maxSectionText)
			}
		case *slack.ActionBlock:
			els := b.Elements.ElementSet
			if len(els) == 0 || len(els) > 25 {
				errs = append(errs, fmt.Errorf("%s: %d elements, want 1..25", where, len(els)))
			}
			for j, el := range els {
				btn, ok := el.(*slack.ButtonBlockElement)
				if !ok {
					errs = append(errs, fmt.Errorf("%s element %d: %T", where, j, el))
					continue
				}
				bw := fmt.Sprintf("%s button %s", where, btn.ActionID)
				text(bw, btn.Text, slack.PlainTextType, maxButtonText)
				if btn.ActionID == "" || len(btn.ActionID) > 255 || actionIDs[btn.ActionID] {
					errs = append(errs, fmt.Errorf("%s: action_id empty, too long or repeated", bw))
				}
				actionIDs[btn.ActionID] = true
				if len(btn.Value) > 2000 {
					errs = append(errs, fmt.Errorf("%s: value too long", bw))
				}
				if c := btn.Confirm; c != nil {
					text(bw+" confirm title", c.Title, slack.PlainTextType, 100)
					text(bw+" confirm text", c.Text, "", 300)
					text(bw+" confirm button", c.Confirm, slack.PlainTextType, 30)
					text(bw+" deny button", c.Deny, slack.PlainTextType, 30)
				}
			}
		default:
			errs = append(errs, fmt.Errorf("%s: a block type the renderer does not use", where))
		}
	}
	return errs
}

// mrkdwnTexts lists every mrkdwn text in blocks.
func mrkdwnTexts(blocks []slack.Block) []string {
	var out []string
	add := func(o *slack.TextBlockObject) {
		if o != nil && o.Type == slack.MarkdownType {
			out = append(out, o.Text)
		}
	}
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			add(b.Text)
			for _, f := range b.Fields {
				add(f)
			}
		case *slack.ContextBlock:
			for _, el := range b.ContextElements.Elements {
				if o, ok := el.(*slack.TextBlockObject); ok {
					add(o)
				}
			}
		}
	}
	return out
}

func TestRenderMetadata(t *testing.T) {
	t.Parallel()
	allowed := []string{"dedupe_key", "ticket_id", "level"}
	keys := map[string]string{}
	for _, tc := range renderCases() {
		m := tc.render(t)
		if m.Metadata.EventType != EventType {
			t.Errorf("%s: event_type %q, want %q", tc.desc, m.Metadata.EventType, EventType)
		}
		for k := range m.Metadata.EventPayload {
			if !slices.Contains(allowed, k) {
				t.Errorf("%s: metadata holds %q; only %v are allowed", tc.desc, k, allowed)
			}
		}
		key, _ := m.Metadata.EventPayload["dedupe_key"].(string)
		if key == "" {
			t.Errorf("%s: no dedupe_key", tc.desc)
		}
		if id, _ := m.Metadata.EventPayload["ticket_id"].(int64); id != 42 {
			t.Errorf("%s: ticket_id %v, want 42", tc.desc, m.Metadata.EventPayload["ticket_id"])
		}
		keys[tc.golden] = key
	}
	// The root keeps its key through every edit; each reply has its own.
	for golden, want := range map[string]string{
		"reason_not_found":    "ticket:42:opened",
		"acknowledged":        "ticket:42:opened",
		"resolved_done":       "ticket:42:opened",
		"reply_escalated":     "ticket:42:escalated:2",
		"reply_repeat":        "ticket:42:repeat:2:2",
		"reply_exhausted":     "outbox:ticket:42:exhausted",
		"exhausted_root":      "ticket:42:opened",
		"resolved_not_sent":   "ticket:42:opened",
		"new_root_escalated":  "ticket:42:escalated:2",
		"reply_ack_timed_out": "ticket:42:ack_timed_out:1",
	} {
		if keys[golden] != want {
			t.Errorf("%s: dedupe_key %q, want %q", golden, keys[golden], want)
		}
	}
}

// buttons returns the root message's buttons by action id.
func buttons(t *testing.T, m Message) map[string]*slack.ButtonBlockElement {
	t.Helper()
	out := map[string]*slack.ButtonBlockElement{}
	for _, b := range m.Blocks {
		if ab, ok := b.(*slack.ActionBlock); ok {
			if ab.BlockID != ActionsBlockID {
				t.Errorf("actions block_id %q, want %q", ab.BlockID, ActionsBlockID)
			}
			for _, el := range ab.Elements.ElementSet {
				btn := el.(*slack.ButtonBlockElement)
				out[btn.ActionID] = btn
			}
		}
	}
	return out
}

func TestRenderButtons(t *testing.T) {
	t.Parallel()
	tk, ev := fixtureFor(proof.ReasonNotFound).ticketAndEvidence(t)
	tk.Version = 5
	level0 := 0
	tests := []struct {
		desc string
		edit func(*review.Ticket)
		want []string
	}{
		{desc: "open: all three", edit: func(*review.Ticket) {}, want: []string{ActionAck, ActionMarkDone, ActionNotSent}},
		{desc: "acknowledged at its level: no Acknowledge", edit: func(tk *review.Ticket) {
			tk.AcknowledgedBy, tk.AcknowledgedLevel = "U0ACK777", &level0
		}, want: []string{ActionMarkDone, ActionNotSent}},
		{desc: "acknowledged at a lower level: the new owner may acknowledge", edit: func(tk *review.Ticket) {
			tk.AcknowledgedBy, tk.AcknowledgedLevel, tk.EscalationLevel = "U0ACK777", &level0, 1
		}, want: []string{ActionAck, ActionMarkDone, ActionNotSent}},
		{desc: "resolved: none", edit: func(tk *review.Ticket) {
			tk.State, tk.Resolution, tk.ResolvedBy = review.StateResolved, review.ResolutionNotSent, "U0ACK777"
		}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			tk := tk
			tc.edit(&tk)
			got := buttons(t, RootMessage(NewAlert(tk, ev)))
			var ids []string
			for id, btn := range got {
				ids = append(ids, id)
				if btn.Value != "42:5" {
					t.Errorf("%s: button %s carries %q, want 42:5", tc.desc, id, btn.Value)
				}
			}
			slices.Sort(ids)
			want := slices.Sorted(slices.Values(tc.want))
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("%s: buttons (-want +got):\n%s", tc.desc, diff)
			}
			if ns := got[ActionNotSent]; ns != nil {
				if ns.Style != slack.StyleDanger || ns.Confirm == nil || ns.Confirm.Confirm.Text != "Confirm not sent" ||
					ns.Confirm.Deny.Text != "Cancel" || !strings.Contains(ns.Confirm.Text.Text, "only the workflow may retry") {
					t.Errorf("%s: not_sent button lacks its danger style or confirmation: %+v", tc.desc, ns.Confirm)
				}
			}
		})
	}
}

func TestButtonValue(t *testing.T) {
	t.Parallel()
	id, version, err := ParseButtonValue(ButtonValue(42, 7))
	if err != nil || id != 42 || version != 7 {
		t.Errorf("round trip: %d, %d, %v; want 42, 7, nil", id, version, err)
	}
	for _, bad := range []string{"", "42", "42:", ":7", "x:7", "42:y", "0:1", "-1:1", "42:-1", "42:7:1"} {
		if _, _, err := ParseButtonValue(bad); err == nil {
			t.Errorf("ParseButtonValue(%q) accepted it", bad)
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		in    string
		limit int
		want  string
	}{
		{desc: "short enough", in: "abc", limit: 3, want: "abc"},
		{desc: "cut with an ellipsis", in: "abcdef", limit: 4, want: "abc…"},
		{desc: "counts characters, not bytes", in: "äöüßé", limit: 4, want: "äöü…"},
		{desc: "no half entity", in: "ab&amp;cd", limit: 5, want: "ab…"},
		{desc: "a whole entity stays", in: "ab&amp;cd", limit: 8, want: "ab&amp;…"},
		{desc: "no half token", in: "x <@U123> y", limit: 6, want: "x …"},
		{desc: "counts code points: an astral emoji is one", in: "😀😀😀", limit: 3, want: "😀😀😀"},
		{desc: "no half emoji sequence", in: "ab👍🏽cd", limit: 4, want: "ab…"},
	}
	for _, tc := range tests {
		if got := clip(tc.in, tc.limit); got != tc.want {
			t.Errorf("%s: clip(%q, %d) = %q, want %q", tc.desc, tc.in, tc.limit, got, tc.want)
		}
		if n := utf8.RuneCountInString(clip(tc.in, tc.limit)); n > tc.limit {
			t.Errorf("%s: %d characters, limit %d", tc.desc, n, tc.limit)
		}
	}
}

// TestSectionEmojiAtTheLimit: a section of emoji sequences, each several
// code points (a ZWJ family, a skin tone, a flag), counted as Slack and
// slack-go count: code points. Exactly at the limit it is sent whole; one
// over, it is cut between two emoji, never inside one, and slack-go's own
// validation of the text object accepts both.
func TestSectionEmojiAtTheLimit(t *testing.T) {
	t.Parallel()
	// What shows as one character each: 5, 2, 2 and 1 code points.
	chars := []string{"👩\u200D👩\u200D👧", "👍🏽", "🇫🇷", "é"}
	unit := strings.Join(chars, "")
	units := strings.Repeat(unit, maxSectionText/utf8.RuneCountInString(unit))
	if utf8.RuneCountInString(units) != maxSectionText {
		t.Fatalf("the fixture has %d code points, want %d", utf8.RuneCountInString(units), maxSectionText)
	}
	for _, tc := range []struct {
		desc string
		in   string
		cut  bool
	}{
		{desc: "exactly at the limit", in: units},
		{desc: "one over", in: units + "x", cut: true},
		{desc: "one over, inside a sequence", in: "x" + units, cut: true},
	} {
		text := mrkdwnSection(tc.in).Text
		if err := text.Validate(); err != nil {
			t.Errorf("%s: slack-go refuses the text: %v", tc.desc, err)
		}
		got := text.Text
		if n := utf8.RuneCountInString(got); n > maxSectionText || !utf8.ValidString(got) {
			t.Errorf("%s: %d code points (limit %d), valid UTF-8 %v", tc.desc, n, maxSectionText, utf8.ValidString(got))
		}
		if !tc.cut {
			if got != tc.in {
				t.Errorf("%s: the text was changed", tc.desc)
			}
			continue
		}
		kept, ok := strings.CutSuffix(got, "…")
		if !ok || !strings.HasPrefix(tc.in, kept) {
			t.Fatalf("%s: not a prefix of the text and an ellipsis", tc.desc)
		}
		// Whole characters only: what was kept is a run of them.
		rest := strings.TrimPrefix(kept, "x")
		for i := 0; rest != ""; i++ {
			c := chars[i%len(chars)]
			if !strings.HasPrefix(rest, c) {
				t.Errorf("%s: the cut splits %+q: the text ends %+q", tc.desc, c, rest)
				break
			}
			rest = rest[len(c):]
		}
	}
}

func TestScrubPersonal(t *testing.T) {
	t.Parallel()
	tests := []struct{ desc, in, want string }{
		{desc: "email", in: "bounce for " + rawEmail + ".", want: "bounce for j***@***.com."},
		{desc: "international number", in: "To=" + rawPhone + " failed", want: "To=+1******0777 failed"},
		{desc: "ids and dates stay", in: "record pi_3MtwBwLkdIwHu7ix28a3tqPa at 2025-03-14T15:09:26Z, 3 attempts",
			want: "record pi_3MtwBwLkdIwHu7ix28a3tqPa at 2025-03-14T15:09:26Z, 3 attempts"},
	}
	for _, tc := range tests {
		if got := scrubPersonal(tc.in); got != tc.want {
			t.Errorf("%s: scrubPersonal(%q) = %q, want %q", tc.desc, tc.in, got, tc.want)
		}
	}
}

// TestRenderOpKeyHoldingTheRecipient: a workflow built its op_key from the
// address ("welcome:jane.doe@example.com"); the ticket's column holds it
// raw, but the message shows the evidence's redacted form.
func TestRenderOpKeyHoldingTheRecipient(t *testing.T) {
	t.Parallel()
	f := fixtureFor(proof.ReasonNotFound)
	f.op.OpKey = "welcome:" + rawEmail
	tk, ev := f.ticketAndEvidence(t)
	m := RootMessage(NewAlert(tk, ev))
	if s := m.Text + string(messageJSON(t, m)); strings.Contains(s, rawEmail) || strings.Contains(s, "jane.doe") {
		t.Errorf("the message holds the address from the op_key:\n%s", s)
	}
}

// controlText is what a provider's error can hold: OSC 0 and OSC 52, CSI,
// a C1 CSI, DEL, NUL, a bidi override, and line breaks of every kind.
const controlText = "boom \x1b]0;pwned\x07\x1b]52;c;Y3VybA==\x1b\\\x1b[2J\x1b[31mred\x1b[0m\u009b31m\x7f\x00\u202eevil\u202c\r\nnext\u2028line\tend"

// TestRenderNoControls: whatever text from outside an alert holds — the
// lookup's error in the detail, the op_key, the workflow, who resolved it,
// a record id, a differing field, an error class, a provider's name — no
// message Slack receives holds a control character, a bidi control or an
// escape sequence's introducer; line breaks only where the message puts
// them.
func TestRenderNoControls(t *testing.T) {
	t.Parallel()
	f := fixtureFor(proof.ReasonLookupFailed)
	f.op.Workflow, f.op.OpKey, f.op.Action = "wf "+controlText, "key "+controlText, "act "+controlText
	f.outcome = func([]providers.Record) proof.Outcome { return proof.Failed("twilio: HTTP 400: " + controlText) }
	tk, ev := f.ticketAndEvidence(t)
	tk.Owner, tk.Priority = "ops "+controlText, "urgent"+controlText
	ev.DifferingFields = []string{"payload." + controlText}
	ev.Errors = append(ev.Errors, proof.AttemptError{Class: "class " + controlText})
	ev.Records = []proof.EvidenceRecord{{ID: "rec " + controlText}}
	a := NewAlert(tk, ev)
	acked := a
	acked.AcknowledgedBy = "ack " + controlText
	reply := EscalationReply(a, EscalationEvent{Kind: review.EscalationLevelUp, FromLevel: 0, ToLevel: 1})
	messages := map[string]Message{
		"root":          RootMessage(a),
		"acknowledged":  RootMessage(acked),
		"resolved":      ResolvedMessage(a, review.ResolutionDuplicate, "by "+controlText, "rec "+controlText),
		"other outcome": ResolvedMessage(a, "outcome "+controlText, "U0ACK777", ""),
		"reply":         reply,
		"repeat":        EscalationReply(a, EscalationEvent{Kind: review.EscalationRepeat, ToLevel: 1, Repeat: 2}),
		"new root":      NewRootMessage(a, Replacement{Why: NewRootUndelivered, Event: reply.Text}),
		"incident":      IncidentMessage(Incident{ID: 1, Provider: "acme " + controlText, StartedAt: renderT0}),
		"group": GroupMessage(AlertGroup{ID: 2, Provider: "acme " + controlText, Reason: "lookup_failed" + controlText, Open: 1,
			Shown: []GroupedTicket{{ID: 3, Workflow: "wf " + controlText, OpKey: "key " + controlText, OpenedAt: renderT0}}}),
	}
	for name, m := range messages {
		var decoded any
		if err := json.Unmarshal(messageJSON(t, m), &decoded); err != nil {
			t.Fatal(err)
		}
		var texts []string
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				texts = append(texts, v)
			case map[string]any:
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(decoded)
		if !strings.Contains(strings.Join(texts, " "), "pwned") {
			t.Errorf("%s: the text itself is gone", name)
		}
		for _, s := range texts {
			for _, r := range s {
				if r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x2028 || r == 0x2029) {
					t.Errorf("%s: a text holds %U: %q", name, r, s)
					break
				}
			}
		}
	}
}

// TestPeopleEventsInTheThread: a reassignment and a note from the review
// page reach the ticket's thread with the person who made them, and a
// note's text does not.
func TestPeopleEventsInTheThread(t *testing.T) {
	t.Parallel()
	tk := review.Ticket{ID: 42, OpKey: "op-42", Reason: proof.ReasonNotFound, Owner: "U0BOB", Priority: "normal",
		State: review.StateOpen, Version: 3, Deadline: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		desc    string
		kind    string
		details any
		want    string
		edit    bool
	}{
		{desc: "reassigned", kind: review.EventReassigned, details: review.ReassignedDetails{From: "U0ANNA", To: "U0BOB"},
			want: "Reassigned from <@U0ANNA> to <@U0BOB> by <@U0LEAD>.", edit: true},
		{desc: "noted", kind: review.EventNoted, details: review.NotedDetails{Note: "call a@example.com"},
			want: "Note added by <@U0LEAD> (on the review page)."},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			details, err := json.Marshal(tc.details)
			if err != nil {
				t.Fatal(err)
			}
			p, err := TicketPost(tk, proof.Evidence{}, review.Event{ID: 7, TicketID: 42, Kind: tc.kind, Actor: "slack:U0LEAD",
				Details: details}, review.EventKey(42, tc.kind, 1), "")
			if err != nil {
				t.Fatal(err)
			}
			if p.Text != tc.want {
				t.Errorf("text = %q, want %q", p.Text, tc.want)
			}
			if (p.RootEdit != nil) != tc.edit {
				t.Errorf("root edit = %v, want %v", p.RootEdit != nil, tc.edit)
			}
		})
	}
}

// TestSilenceEndedIsTheCurrentState: the one message of a ticket a silence
// held names the silence and the ticket's owner and level, edits its root
// to the current state and, when the ticket has no root in Slack, is the
// root: the ticket as it is now.
func TestSilenceEndedIsTheCurrentState(t *testing.T) {
	t.Parallel()
	tk := review.Ticket{ID: 42, OpKey: "op-42", Reason: proof.ReasonNotFound, Owner: "U0BOB", Priority: "high", EscalationLevel: 2,
		State: review.StateOpen, Version: 3, Deadline: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	e := review.Event{ID: 7, TicketID: 42, Kind: review.EventSilenceEnded, Actor: "sweeper", Details: json.RawMessage(`{"silence_id":9}`)}
	key := review.EventKey(42, review.EventSilenceEnded, 9)
	reply, err := TicketPost(tk, proof.Evidence{}, e, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reply.Text, "Silence 9 ended. Still open, owner <@U0BOB>, escalation level 2") || reply.RootEdit == nil {
		t.Errorf("reply %q, root edit %v", reply.Text, reply.RootEdit != nil)
	}
	root, err := TicketPost(tk, proof.Evidence{}, e, key, NewRootUndelivered)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(root.Text, "Silence 9 ended") || len(root.Blocks) == 0 || root.RootEdit != nil {
		t.Errorf("new root %q with %d blocks, root edit %v", root.Text, len(root.Blocks), root.RootEdit != nil)
	}
	if _, err := TicketPost(tk, proof.Evidence{}, review.Event{ID: 8, Kind: review.EventSilenceEnded, Details: json.RawMessage(`[`)}, key, ""); err == nil {
		t.Error("unreadable details: no error")
	}
}

// TestAckTimedOutInTheThread: an acknowledgement that timed out reaches the
// ticket's thread, broadcast, saying whose acknowledgement at which level
// lapsed after how long, mentioning the owner; the root is edited back to
// unacknowledged, with its Acknowledge button.
func TestAckTimedOutInTheThread(t *testing.T) {
	t.Parallel()
	tk := review.Ticket{ID: 42, OpKey: "op-42", Reason: proof.ReasonNotFound, Owner: "U0ONCALL", Priority: "urgent",
		EscalationLevel: 2, State: review.StateOpen, Version: 7, Deadline: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)}
	details, err := json.Marshal(review.AckTimedOutDetails{Level: 2, AcknowledgedBy: "slack:U0ACK777",
		AcknowledgedAt: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), AckTimeoutSeconds: 1800, Lapse: 1,
		Owner: "U0ONCALL", Priority: "urgent", Deadline: tk.Deadline})
	if err != nil {
		t.Fatal(err)
	}
	key := review.EscalationStep{Kind: review.EscalationAckTimedOut, AckLapses: 1}.DedupeKey(42)
	p, err := TicketPost(tk, proof.Evidence{}, review.Event{ID: 9, TicketID: 42, Kind: review.EventAckTimedOut,
		Actor: review.ActorSweeper, Details: details}, key, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"acknowledged by <@U0ACK777> at level 2, still open after 30m: escalation resumes",
		"<@U0ONCALL>, please acknowledge it again"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text %q does not say %q", p.Text, want)
		}
	}
	if !p.Broadcast {
		t.Error("not broadcast: the owner must hear of it in the channel")
	}
	if p.RootEdit == nil {
		t.Fatal("no root edit: the root would still say acknowledged")
	}
	if !strings.Contains(p.RootEdit.Text+blocksText(t, p.RootEdit.Blocks), "not yet acknowledged") {
		t.Errorf("root edit does not show the ticket unacknowledged: %q", p.RootEdit.Text)
	}
	if _, err := TicketPost(tk, proof.Evidence{}, review.Event{ID: 9, TicketID: 42, Kind: review.EventAckTimedOut,
		Actor: review.ActorSweeper, Details: []byte(`{"level":"two"}`)}, key, ""); err == nil {
		t.Error("unreadable details rendered without an error")
	}
}

// blocksText is the JSON of blocks, to search for words.
func blocksText(t *testing.T, blocks []slack.Block) string {
	t.Helper()
	b, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 2 * time.Hour: "2h",
		45 * time.Second: "45s", 24 * time.Hour: "24h"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
