// Package notify delivers review alerts to Slack: one root message per
// ticket, edited as the ticket changes, and a thread reply for each
// escalation step.
//
// This file set renders those messages as Block Kit. Rendering is pure —
// no I/O, no clock — so the same ticket always gives the same message, and
// the golden files under testdata/ show exactly what Slack receives. What a
// message shows is escaped and bounded here, once: user-controlled text
// (workflow names, op_keys, details) can neither ping anyone nor push a
// message past Slack's limits, and no raw recipient ever reaches it (I7).
package notify

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/review"
)

// MetadataEventType is the event_type of every message's metadata, by which
// an uncertain post is found again in a channel's history.
const MetadataEventType = "sweeper_ticket"

// Block and action ids of the root message's buttons; the interactivity
// endpoint dispatches on them.
const (
	ActionsBlockID   = "ticket_actions"
	ActionAck        = "ack"
	ActionMarkDone   = "mark_done"
	ActionNotSent    = "not_sent"
	maxRecordIDsShow = 5
	maxDifferingShow = 10
)

// Slack's limits, in characters
// (https://docs.slack.dev/reference/block-kit/blocks). A message over one of
// them fails with invalid_blocks or msg_too_long, permanently, so every text
// is clipped to fit before it is sent.
//
// A character is a Unicode code point, not a UTF-16 code unit nor a byte:
// Slack's RTM limits (https://api.slack.com/rtm#limits) keep 4,000
// characters under 16 KB "even with a message comprised solely of non-BMP
// Unicode characters at 4 bytes each", so an astral emoji is one character
// there, and slack-go's TextBlockObject.Validate (block_object.go) counts
// the 3,000 of a text object with utf8.RuneCountInString. The count is of
// the text as sent: "&amp;" is five. [clip] counts so, and
// [safetext.TruncateChars] cuts only between what shows as characters.
const (
	maxSectionText  = 3000
	maxFieldText    = 2000
	maxHeaderText   = 150
	maxButtonText   = 75
	maxFallbackText = 4000 // Slack allows 40,000; a notification shows far less.
)

// Alert is everything a ticket's Slack messages show. It holds no raw
// recipient: only the masked one from the evidence. Build it with
// [NewAlert].
type Alert struct {
	// TicketID and Version identify the ticket as shown; the buttons carry
	// both, so a click on an outdated message is detected by the version
	// compare-and-set (review.Resolution.ExpectVersion).
	TicketID int64
	Version  int
	// RootDedupeKey is the dedupe key the root message carries in its
	// metadata, so that an uncertain post can be found and adopted. The root
	// keeps it through every edit: an edit must never make the root look
	// like the message of another event. [NewAlert] sets the opened event's
	// key, "ticket:ID:opened".
	RootDedupeKey string

	// State is review.StateOpen or review.StateResolved.
	State    string
	Priority string
	Level    int
	// Owner is the Slack user id of the ticket's owner.
	Owner    string
	Deadline time.Time
	// AcknowledgedBy is who acknowledged the ticket at its current level;
	// empty when nobody has (an acknowledgement at a lower level does not
	// count: the new owner has not taken it).
	AcknowledgedBy string
	// Exhausted is true once escalation has taken its final step: the
	// deadline shown is then the one that passed.
	Exhausted bool
	OpenedAt  time.Time

	// Resolution, ResolvedBy, ResolutionRecordID and ResolvedAt describe a
	// resolved ticket. The resolution note is never shown: people write it
	// freely, and it may name the customer.
	Resolution         string
	ResolvedBy         string
	ResolutionRecordID string
	ResolvedAt         time.Time

	OpKey    string
	Workflow string
	Provider string
	Action   string
	// RecipientMasked is review.Evidence.RecipientMasked.
	RecipientMasked string
	Reason          review.Reason
	Detail          string
	// RecordIDs are the ids of the records the lookup found, in evidence
	// order.
	RecordIDs       []string
	DifferingFields []string
	// LookupErrors counts the failed lookup attempts; LastErrorClass is the
	// class of the last one ("timeout", "rate_limited", …).
	LookupErrors   int
	LastErrorClass string
	// Attempts is how often the workflow attempted the effect, the first
	// time at FirstAttemptAt.
	Attempts       int
	FirstAttemptAt time.Time
	LookedUpAt     time.Time
}

// NewAlert gathers what the messages of ticket t show, from t and its
// evidence snapshot ev (decoded from t.Evidence by the caller).
func NewAlert(t review.Ticket, ev review.Evidence) Alert {
	a := Alert{
		TicketID:           t.ID,
		Version:            t.Version,
		RootDedupeKey:      review.OpenedKey(t.ID),
		State:              t.State,
		Priority:           t.Priority,
		Level:              t.EscalationLevel,
		Owner:              t.Owner,
		Deadline:           t.Deadline,
		OpenedAt:           t.CreatedAt,
		Resolution:         t.Resolution,
		ResolvedBy:         t.ResolvedBy,
		ResolutionRecordID: t.ResolutionRecordID,
		OpKey:              cmp.Or(ev.OpKey, t.OpKey), // the evidence's is redacted
		Workflow:           ev.Workflow,
		Provider:           ev.Provider,
		Action:             ev.Action,
		RecipientMasked:    ev.RecipientMasked,
		Reason:             cmp.Or(t.Reason, ev.Reason),
		Detail:             ev.Detail,
		DifferingFields:    ev.DifferingFields,
		LookupErrors:       len(ev.Errors),
		Attempts:           ev.Attempts,
		FirstAttemptAt:     ev.FirstAttemptAt,
		LookedUpAt:         ev.LookedUpAt,
	}
	if t.ResolvedAt != nil {
		a.ResolvedAt = *t.ResolvedAt
	}
	if t.AcknowledgedLevel != nil && *t.AcknowledgedLevel == t.EscalationLevel {
		a.AcknowledgedBy = t.AcknowledgedBy
	}
	if n := len(ev.Errors); n > 0 {
		a.LastErrorClass = ev.Errors[n-1].Class
	}
	for _, r := range ev.Records {
		a.RecordIDs = append(a.RecordIDs, r.ID)
	}
	return a
}

// Message is one rendered Slack message.
type Message struct {
	// Text is the plain fallback: notifications and clients without blocks
	// show it. Always set, already escaped for mrkdwn.
	Text string `json:"text"`
	// Blocks is the Block Kit layout.
	Blocks []slack.Block `json:"blocks"`
	// Metadata carries opaque ids only — it is visible to the whole
	// workspace — under [MetadataEventType]: "dedupe_key" and "ticket_id",
	// and "level" on escalation replies.
	Metadata slack.SlackMetadata `json:"metadata"`
}

// MsgOptions returns m as chat.postMessage / chat.update options. The text
// is passed unescaped: it is escaped already.
func (m Message) MsgOptions() []slack.MsgOption {
	return []slack.MsgOption{
		slack.MsgOptionText(m.Text, false),
		slack.MsgOptionBlocks(m.Blocks...),
		slack.MsgOptionMetadata(m.Metadata),
	}
}

// RootMessage renders a ticket's root message in its current state: a
// header with the priority, the state, what the operation was, why it needs
// a person, the evidence, and — while the ticket is open — the buttons
// Acknowledge (unless already acknowledged at this level), Mark done and
// Confirm not sent. A resolved ticket has no buttons.
func RootMessage(a Alert) Message {
	resolved := a.State == review.StateResolved
	blocks := []slack.Block{
		slack.NewHeaderBlock(plainText(clip(headerText(a), maxHeaderText))),
		mrkdwnSection(stateLine(a)),
		slack.NewSectionBlock(nil, []*slack.TextBlockObject{
			field("Workflow", codeSpan(a.Workflow, 200)),
			field("Provider", codeSpan(a.Provider, 200)),
			field("Action", codeSpan(a.Action, 200)),
			field("Owner", person(a.Owner)),
			field(deadlineLabel(a), slackDate(a.Deadline)),
			field("Escalation level", strconv.Itoa(a.Level)),
		}, nil),
		mrkdwnSection(reasonText(a)),
		mrkdwnSection(evidenceText(a)),
		mrkdwnSection("*op_key* " + codeSpan(a.OpKey, 1000) + "\n*Recipient* " + recipient(a.RecipientMasked)),
		slack.NewContextBlock("", mrkdwn(contextLine(a))),
	}
	if !resolved {
		blocks = append(blocks, actionsBlock(a))
	}
	return Message{
		Text:     clip(rootFallback(a), maxFallbackText),
		Blocks:   blocks,
		Metadata: metadata(a.RootDedupeKey, a.TicketID, nil),
	}
}

// ResolvedMessage renders the root message in its final state: a resolved
// with outcome (review.ResolutionDone, review.ResolutionNotSent or
// review.ResolutionDuplicate) by by (a Slack user id or a name), naming
// recordID, the record that stands, for done and duplicate. It has no
// buttons.
func ResolvedMessage(a Alert, outcome, by, recordID string) Message {
	a.State = review.StateResolved
	a.Resolution, a.ResolvedBy, a.ResolutionRecordID = outcome, by, recordID
	return RootMessage(a)
}

// Replacement is why, and for which event, a ticket's message other than
// its first is posted as a new root message.
type Replacement struct {
	// Why is NewRootUndelivered or NewRootRemoved.
	Why string
	// Event is the event's own text, already escaped (an escalation
	// reply's, with its mention of the new owner); "" when the event is
	// the replacement itself.
	Event string
	// DedupeKey is the key of the event the message delivers.
	DedupeKey string
}

// NewRootMessage renders a new root message for a ticket whose root is
// not in Slack: the ticket's current state as [RootMessage] shows it,
// buttons included, after a line saying why this message is the root now
// and what happened (r.Event). The ticket's later replies go in its
// thread. Its text leads with the event, so a notification shows it.
func NewRootMessage(a Alert, r Replacement) Message {
	root := RootMessage(a)
	note := "ℹ️ The ticket's first alert never reached Slack: this message stands in for it, and the thread continues here."
	if r.Why == NewRootRemoved {
		note = "ℹ️ The ticket's previous message was removed from Slack: this message replaces it, and the thread continues here."
	}
	lead := note
	if r.Event != "" {
		lead = clip(r.Event, maxSectionText-utf8.RuneCountInString(note)-1) + "\n" + note
	}
	blocks := append([]slack.Block{root.Blocks[0], mrkdwnSection(lead)}, root.Blocks[1:]...)
	text := root.Text
	if r.Event != "" {
		text = oneLine(r.Event) + " — " + text
	}
	return Message{
		Text:     clip(text, maxFallbackText),
		Blocks:   blocks,
		Metadata: metadata(r.DedupeKey, a.TicketID, nil),
	}
}

// EscalationEvent is one escalation step, as its thread reply tells it.
type EscalationEvent struct {
	// Kind is review.EscalationLevelUp, review.EscalationRepeat or
	// review.EscalationExhausted; any other kind is told as a level change.
	Kind      review.EscalationKind
	FromLevel int
	ToLevel   int
	// Repeat is the repeat's number (review.EscalationStep.RepeatCount).
	Repeat int
	// DedupeKey is the key of the outbox event the reply delivers, carried
	// in its metadata. Empty means the step's audit-event key
	// (review.EscalationStep.DedupeKey). It must differ from the root's.
	DedupeKey string
}

// EscalationReply renders the thread reply for an escalation step (to be
// posted with reply_broadcast): it mentions the owner, since editing the
// root does not notify anyone, and says the level, priority and deadline.
// a is the ticket after the step: its owner, priority and deadline are the
// new ones (for an exhausted step, the deadline that passed).
func EscalationReply(a Alert, e EscalationEvent) Message {
	if e.Kind != review.EscalationRepeat && e.Kind != review.EscalationExhausted {
		e.Kind = review.EscalationLevelUp
	}
	key := e.DedupeKey
	if key == "" {
		key = review.EscalationStep{Kind: e.Kind, ToLevel: e.ToLevel, RepeatCount: e.Repeat}.DedupeKey(a.TicketID)
	}
	owner, prio, ticket := person(a.Owner), priorityWord(a.Priority), fmt.Sprintf("review ticket #%d", a.TicketID)
	var text string
	switch e.Kind {
	case review.EscalationRepeat:
		text = fmt.Sprintf("🔁 *Reminder %d:* %s is still open at level %d and past its deadline. %s, please acknowledge it or decide.\n"+
			"*Priority:* %s · *Next reminder:* %s",
			e.Repeat, ticket, e.ToLevel, owner, prio, slackDate(a.Deadline))
	case review.EscalationExhausted:
		text = fmt.Sprintf("⛔ *Escalation exhausted:* %s has been through every escalation level and reminder; no further alerts will follow. "+
			"It stays open at level %d with %s, overdue since %s, until someone decides.\n*Priority:* %s",
			ticket, e.ToLevel, owner, slackDate(a.Deadline), prio)
	default:
		text = fmt.Sprintf("🔺 *Escalated from level %d to level %d:* %s now owns %s.\n*Priority:* %s · *Deadline:* %s",
			e.FromLevel, e.ToLevel, owner, ticket, prio, slackDate(a.Deadline))
	}
	summary := fmt.Sprintf("Workflow %s · %s %s · op_key %s · %s. Decide with the buttons on the message above.",
		codeSpan(a.Workflow, 200), codeSpan(a.Provider, 200), codeSpan(a.Action, 200), codeSpan(a.OpKey, 500), reasonWords(a.Reason))
	level := e.ToLevel
	return Message{
		Text: clip(text, maxFallbackText),
		Blocks: []slack.Block{
			mrkdwnSection(text),
			slack.NewContextBlock("", mrkdwn(clip(summary, maxSectionText))),
		},
		Metadata: metadata(key, a.TicketID, &level),
	}
}

// ButtonValue is what every button of a ticket's message carries:
// "TICKET_ID:VERSION". The version is the ticket's as the message shows it,
// so a click on an outdated message fails the version compare-and-set.
func ButtonValue(ticketID int64, version int) string {
	return fmt.Sprintf("%d:%d", ticketID, version)
}

// ParseButtonValue reads a [ButtonValue] back. Its error says what is wrong
// with v.
func ParseButtonValue(v string) (ticketID int64, version int, err error) {
	id, ver, ok := strings.Cut(v, ":")
	if !ok {
		return 0, 0, fmt.Errorf("button value %q: want TICKET_ID:VERSION", v)
	}
	ticketID, err = strconv.ParseInt(id, 10, 64)
	if err != nil || ticketID <= 0 {
		return 0, 0, fmt.Errorf("button value %q: ticket id must be a positive number", v)
	}
	version, err = strconv.Atoi(ver)
	if err != nil || version < 0 {
		return 0, 0, fmt.Errorf("button value %q: version must be a number ≥ 0", v)
	}
	return ticketID, version, nil
}

func actionsBlock(a Alert) *slack.ActionBlock {
	value := ButtonValue(a.TicketID, a.Version)
	var buttons []slack.BlockElement
	if a.AcknowledgedBy == "" {
		buttons = append(buttons, slack.NewButtonBlockElement(ActionAck, value, plainText("Acknowledge")).
			WithStyle(slack.StylePrimary))
	}
	buttons = append(buttons, slack.NewButtonBlockElement(ActionMarkDone, value, plainText("Mark done")))
	confirm := slack.NewConfirmationBlockObject(
		plainText(fmt.Sprintf("Confirm ticket #%d was not sent?", a.TicketID)),
		plainText("This records that the effect did not happen: the ledger row becomes failed. "+
			"sweeper never resends; only the workflow may retry, under a new key."),
		plainText("Confirm not sent"),
		plainText("Cancel"),
	).WithStyle(slack.StyleDanger)
	buttons = append(buttons, slack.NewButtonBlockElement(ActionNotSent, value, plainText("Confirm not sent")).
		WithStyle(slack.StyleDanger).WithConfirm(confirm))
	return slack.NewActionBlock(ActionsBlockID, buttons...)
}

func metadata(key string, ticketID int64, level *int) slack.SlackMetadata {
	payload := map[string]any{"dedupe_key": key, "ticket_id": ticketID}
	if level != nil {
		payload["level"] = *level
	}
	return slack.SlackMetadata{EventType: MetadataEventType, EventPayload: payload}
}

// headerText holds no user-controlled text: a header is plain_text, where
// mrkdwn escaping does not apply.
func headerText(a Alert) string {
	if a.State == review.StateResolved {
		return fmt.Sprintf("✅ Resolved · review ticket #%d · %s", a.TicketID, outcomeWords(a.Resolution))
	}
	state := "open"
	switch {
	case a.Exhausted:
		state = "open, escalation exhausted"
	case a.AcknowledgedBy != "":
		state = "acknowledged"
	}
	return fmt.Sprintf("%s · review ticket #%d · %s", priorityWord(a.Priority), a.TicketID, state)
}

// priorityWord names the configured priorities (low, normal, high, urgent)
// so that the urgent ones stand out; any other value is shown as a plain
// word.
func priorityWord(p string) string {
	switch p {
	case "urgent":
		return "🔴 URGENT"
	case "high":
		return "🟠 HIGH"
	case "normal":
		return "🔵 normal"
	case "low":
		return "⚪ low"
	}
	word := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			return r
		}
		return -1
	}, p)
	return "❔ " + cmp.Or(clip(word, 20), "no priority")
}

func stateLine(a Alert) string {
	if a.State == review.StateResolved {
		s := "*State:* resolved: *" + outcomeWords(a.Resolution) + "* by " + person(a.ResolvedBy)
		if !a.ResolvedAt.IsZero() {
			s += " on " + slackDate(a.ResolvedAt)
		}
		switch a.Resolution {
		case review.ResolutionDone:
			s += "\nThe effect happened: record " + codeSpan(a.ResolutionRecordID, 200) + " proves it; the ledger row is done."
		case review.ResolutionNotSent:
			s += "\nThe effect did not happen: the ledger row is failed. sweeper never resends; only the workflow may retry, under a new key."
		case review.ResolutionDuplicate:
			s += "\nSeveral records exist: " + codeSpan(a.ResolutionRecordID, 200) + " stands and the ledger row is done with it."
			var others []string
			for _, id := range a.RecordIDs {
				if id != a.ResolutionRecordID {
					others = append(others, id)
				}
			}
			if len(others) > 0 {
				s += " Duplicates: " + idList(others) + "."
			}
		}
		return s
	}
	s := "*State:* open, not yet acknowledged"
	if a.AcknowledgedBy != "" {
		s = fmt.Sprintf("*State:* acknowledged by %s at level %d", person(a.AcknowledgedBy), a.Level)
	}
	if a.Exhausted {
		s += "\nEscalation is exhausted: no further reminders. The ticket stays open until someone decides."
	}
	return s
}

func outcomeWords(o string) string {
	switch o {
	case review.ResolutionDone:
		return "done"
	case review.ResolutionNotSent:
		return "not sent"
	case review.ResolutionDuplicate:
		return "duplicate"
	}
	return cmp.Or(oneLine(clip(o, 40)), "unknown outcome")
}

func deadlineLabel(a Alert) string {
	switch {
	case a.State == review.StateResolved:
		return "Deadline was"
	case a.Exhausted:
		return "Overdue since"
	}
	return "Deadline"
}

func reasonText(a Alert) string {
	label := "*Why a person must decide:* "
	if a.State == review.StateResolved {
		label = "*Why a person had to decide:* "
	}
	s := label + escape(a.Reason.Describe())
	if a.Detail != "" {
		// Quoted line by line: each line made one line of inert text by
		// escape, the detail's own line breaks kept.
		lines := strings.Split(strings.TrimSpace(a.Detail), "\n")
		for i, l := range lines {
			lines[i] = escape(scrubPersonal(l))
		}
		s += "\n>" + strings.Join(lines, "\n>")
	}
	return s
}

// reasonWords is a reason in a few words, for one-line summaries.
func reasonWords(r review.Reason) string {
	switch r {
	case review.ReasonNotFound:
		return "no record found"
	case review.ReasonMultipleMatches:
		return "several records found"
	case review.ReasonPayloadMismatch:
		return "the record differs"
	case review.ReasonAmbiguousOwner:
		return "the record could be another operation's"
	case review.ReasonLookupFailed:
		return "the lookup failed"
	case review.ReasonLookupUnsupported:
		return "the provider cannot search"
	case review.ReasonInvalidOperation:
		return "the ledger row cannot be looked up"
	case review.ReasonInFlight:
		return "still in flight at the provider"
	case review.ReasonProviderFailed:
		return "the provider reports the attempt failed"
	case review.ReasonProviderReversed:
		return "the provider reports it refunded or disputed"
	}
	return "reason " + codeSpan(string(r), 50)
}

func evidenceText(a Alert) string {
	var b strings.Builder
	b.WriteString("*Evidence*\n• Records found: ")
	if len(a.RecordIDs) == 0 {
		b.WriteString("none")
	} else {
		fmt.Fprintf(&b, "%d: %s", len(a.RecordIDs), idList(a.RecordIDs))
	}
	if len(a.DifferingFields) > 0 {
		b.WriteString("\n• What differed: ")
		b.WriteString(listed(a.DifferingFields, maxDifferingShow, 100))
	}
	if a.LookupErrors > 0 || a.Reason == review.ReasonLookupFailed {
		fmt.Fprintf(&b, "\n• Lookup errors: %d", a.LookupErrors)
		if a.LastErrorClass != "" {
			b.WriteString(" (last: " + escape(oneLine(clip(a.LastErrorClass, 50))) + ")")
		}
	}
	if a.Attempts > 0 {
		fmt.Fprintf(&b, "\n• Workflow attempts: %d", a.Attempts)
		if !a.FirstAttemptAt.IsZero() {
			b.WriteString(", the first on " + slackDate(a.FirstAttemptAt))
		}
	}
	return b.String()
}

func idList(ids []string) string { return listed(ids, maxRecordIDsShow, 100) }

// listed shows at most limit items in code spans, then how many more.
func listed(items []string, limit, each int) string {
	shown := make([]string, 0, min(len(items), limit))
	for _, s := range items[:min(len(items), limit)] {
		shown = append(shown, codeSpan(s, each))
	}
	s := strings.Join(shown, ", ")
	if n := len(items) - len(shown); n > 0 {
		s += fmt.Sprintf(" and %d more", n)
	}
	return s
}

func contextLine(a Alert) string {
	s := fmt.Sprintf("sweeper · ticket #%d, version %d", a.TicketID, a.Version)
	if !a.OpenedAt.IsZero() {
		s += " · opened " + slackDate(a.OpenedAt)
	}
	if !a.LookedUpAt.IsZero() {
		s += " · looked up " + slackDate(a.LookedUpAt)
	}
	return s + " · sweeper never resends: it only looks."
}

func rootFallback(a Alert) string {
	what := fmt.Sprintf("%s, %s %s", codeSpan(a.Workflow, 200), codeSpan(a.Provider, 200), codeSpan(a.Action, 200))
	if a.State == review.StateResolved {
		return fmt.Sprintf("✅ Review ticket #%d resolved: %s by %s (%s).",
			a.TicketID, outcomeWords(a.Resolution), person(a.ResolvedBy), what)
	}
	state := "open"
	if a.AcknowledgedBy != "" {
		state = "acknowledged by " + person(a.AcknowledgedBy)
	}
	return fmt.Sprintf("%s review ticket #%d (%s): %s: %s. Owner %s, deadline %s.",
		priorityWord(a.Priority), a.TicketID, state, what, escape(a.Reason.Describe()), person(a.Owner), slackDate(a.Deadline))
}

// slackUserID matches Slack user ids (U…, W… for Enterprise Grid).
var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// person mentions a Slack user id; anything else (a name given on the CLI,
// "sweeper") is shown as escaped text, so it cannot smuggle a mention in.
func person(who string) string {
	switch {
	case slackUserID.MatchString(who):
		return "<@" + who + ">"
	case who == "":
		return "nobody"
	}
	return "*" + escape(oneLine(clip(who, 100))) + "*"
}

// slackDate shows t in each reader's time zone, with an RFC 3339 UTC
// fallback for clients that cannot.
func slackDate(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format(time.RFC3339))
}

func recipient(masked string) string {
	if masked == "" {
		return "none recorded"
	}
	return codeSpan(masked, 200)
}

// codeSpan shows user-controlled text verbatim in code formatting. Slack
// has no escape for a backtick inside a code span, so one is shown as ˋ
// (U+02CB); line breaks would end the span, so they become spaces.
func codeSpan(s string, limit int) string {
	s = oneLine(s)
	if s == "" {
		return "—"
	}
	return "`" + clip(escape(strings.ReplaceAll(s, "`", "ˋ")), limit) + "`"
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape makes s literal text for mrkdwn, on one line: Slack parses &, <
// and > as control characters, so "<!channel>" in a workflow name would
// ping a whole channel; and a provider's text can hold escape sequences
// and bidi controls, which [safetext.Printable] makes inert — a message
// is read in terminals too (Slack's CLI clients, a pasted log).
func escape(s string) string { return mrkdwnEscaper.Replace(safetext.Printable(s)) }

// oneLine is s as one line without control characters, line breaks a
// space, escape sequences and bidi controls inert: [safetext.Printable].
func oneLine(s string) string { return safetext.Printable(s) }

// clip cuts s to at most limit characters (code points, as Slack counts
// them), ending with "…". It does not cut a character, an emoji sequence
// or a flag in half ([safetext.TruncateChars]), nor leave half an entity
// (&amp;) or half a <…> token at the cut.
func clip(s string, limit int) string {
	cut := safetext.TruncateChars(s, limit)
	if cut == s {
		return s
	}
	cut = strings.TrimSuffix(cut, "…")
	if i := strings.LastIndexByte(cut, '&'); i > strings.LastIndexByte(cut, ';') {
		cut = cut[:i]
	}
	if i := strings.LastIndexByte(cut, '<'); i > strings.LastIndexByte(cut, '>') {
		cut = cut[:i]
	}
	return cut + "…"
}

var (
	emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+`)
	// phonePattern: an international number, or a bare run of 10–15 digits.
	phonePattern = regexp.MustCompile(`\+\d[\d ().-]{5,18}\d|\b\d{10,15}\b`)
)

// scrubPersonal masks what looks like an email address or a phone number
// in free text. Details come from adapters that already redact recipients;
// this is the second line, because Slack is outside the database (I7).
func scrubPersonal(s string) string {
	s = emailPattern.ReplaceAllStringFunc(s, review.MaskRecipient)
	return phonePattern.ReplaceAllStringFunc(s, review.MaskRecipient)
}

func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func mrkdwnSection(s string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwn(clip(s, maxSectionText)), nil, nil)
}

func field(label, value string) *slack.TextBlockObject {
	return mrkdwn(clip("*"+label+"*\n"+value, maxFieldText))
}
