// Package message builds sweeper's Slack messages: a ticket's root message,
// edited as the ticket changes, and a thread reply for each later event;
// an alert group's message; a provider incident's messages. It is the
// pipeline's pure stage: it builds a message from what the message is about
// (an [Alert], an [AlertGroup], an [Incident], read by the caller) and does
// no I/O and reads no clock, so the same input always gives the same
// message. Delivery (package notify and its receivers) reads, posts and
// records; the outbox (package notify/outbox) stores.
//
// The golden files under testdata/ are the messages exactly as Slack
// receives them when they are posted: their text, their blocks and their
// metadata, which the dispatcher builds with the same [Metadata]. (An edit
// of a root message carries the metadata of the message it edits; an
// incident's messages get theirs, naming the incident, where they are
// delivered: their golden files hold none.) What a message shows is escaped
// and bounded here, once: user-controlled text (workflow names, op_keys,
// details) can neither ping anyone nor push a message past Slack's limits,
// and no raw recipient ever reaches it (I7).
package message

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// Block and action ids of the root message's buttons; the interactivity
// endpoint dispatches on them.
const (
	ActionsBlockID   = "ticket_actions"
	ActionAck        = "ack"
	ActionMarkDone   = "mark_done"
	ActionNotSent    = "not_sent"
	maxRecordIDsShow = 5
	maxDifferingShow = 10
	// maxConfirmText is the most characters a confirm dialog's text holds.
	maxConfirmText = 300
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
	// RecipientMasked is proof.Evidence.RecipientMasked.
	RecipientMasked string
	Reason          proof.Reason
	Detail          string
	// RecordIDs are the ids of the records the lookup found, in evidence
	// order.
	RecordIDs       []string
	DifferingFields []string
	// Doubts say, for each record a person would mark the ticket done
	// with and must confirm first ([review.Doubts]), what differs; Doubtful
	// is set when there is any such record.
	Doubts   []string
	Doubtful bool
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
func NewAlert(t review.Ticket, ev proof.Evidence) Alert {
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
	for _, c := range review.Doubts(t) {
		a.Doubtful = true
		if len(c.Differing) > 0 {
			a.Doubts = append(a.Doubts, fmt.Sprintf("record %s differs in %s", c.RecordID, strings.Join(c.Differing, ", ")))
		}
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
	// Metadata, on a ticket's message, is what it is posted with:
	// [Metadata] of the key of the event it delivers and the ticket.
	Metadata slack.SlackMetadata `json:"metadata"`
}

// Post is m as a message to post: its text and blocks. The dispatcher adds
// the metadata of the outbox row it delivers.
func (m Message) Post() Post { return Post{Text: m.Text, Blocks: m.Blocks} }

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
		Metadata: Metadata(a.RootDedupeKey, AboutTicket(a.TicketID)),
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

// Why a ticket's message other than "opened" is posted as a new root.
const (
	// NewRootUndelivered: the ticket's root message never reached Slack
	// (parked or dismissed).
	NewRootUndelivered = "undelivered"
	// NewRootRemoved: the ticket's root message was removed from Slack.
	NewRootRemoved = "removed"
	// NewRootFolded: the ticket's first alert was folded into its alert
	// group's counts, and this event is one its owner must hear of.
	NewRootFolded = "folded"
)

// Replacement is why, and for which event, a ticket's message other than
// its first is posted as a new root message.
type Replacement struct {
	// Why is [NewRootUndelivered], [NewRootRemoved] or [NewRootFolded].
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
	switch r.Why {
	case NewRootRemoved:
		note = "ℹ️ The ticket's previous message was removed from Slack: this message replaces it, and the thread continues here."
	case NewRootFolded:
		note = "ℹ️ The ticket was counted in its alert group's message, without an alert of its own: this is its alert now, and its thread continues here."
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
		Metadata: Metadata(r.DedupeKey, AboutTicket(a.TicketID)),
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
	return Message{
		Text: clip(text, maxFallbackText),
		Blocks: []slack.Block{
			mrkdwnSection(text),
			slack.NewContextBlock("", mrkdwn(clip(summary, maxSectionText))),
		},
		Metadata: Metadata(key, AboutTicket(a.TicketID)),
	}
}

// AckTimeoutEvent is an acknowledgement that timed out, as its
// "ack_timed_out" event records it.
type AckTimeoutEvent struct {
	// Level is the level it was made at; By who made it (a Slack user id,
	// "slack:U…", or a name from the CLI or the review page).
	Level int
	By    string
	// AckTimeout is the level's ack timeout.
	AckTimeout time.Duration
	// DedupeKey is the event's key ("ticket:ID:ack_timed_out:N").
	DedupeKey string
}

// AckTimeoutReply renders the thread reply for an acknowledgement that
// timed out (to be posted with reply_broadcast): it says whose
// acknowledgement lapsed, at which level and after how long, and mentions
// the owner, since escalation resumes and only a mention notifies anyone.
// a is the ticket after the step: unacknowledged, with its current owner,
// priority and deadline.
func AckTimeoutReply(a Alert, e AckTimeoutEvent) Message {
	owner, ticket := person(a.Owner), fmt.Sprintf("review ticket #%d", a.TicketID)
	text := fmt.Sprintf("⏰ *Acknowledgement timed out:* %s was acknowledged by %s at level %d, still open after %s: escalation resumes. "+
		"%s, please acknowledge it again or decide.\n*Priority:* %s · *Next step:* %s",
		ticket, mention(e.By), e.Level, shortDuration(e.AckTimeout), owner, priorityWord(a.Priority), slackDate(a.Deadline))
	summary := fmt.Sprintf("Workflow %s · %s %s · op_key %s · %s. Decide with the buttons on the message above.",
		codeSpan(a.Workflow, 200), codeSpan(a.Provider, 200), codeSpan(a.Action, 200), codeSpan(a.OpKey, 500), reasonWords(a.Reason))
	return Message{
		Text: clip(text, maxFallbackText),
		Blocks: []slack.Block{
			mrkdwnSection(text),
			slack.NewContextBlock("", mrkdwn(clip(summary, maxSectionText))),
		},
		Metadata: Metadata(e.DedupeKey, AboutTicket(a.TicketID)),
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
	markDone := slack.NewButtonBlockElement(ActionMarkDone, value, plainText("Mark done"))
	if a.Doubtful {
		// A record the evidence marks as differing is never one click
		// away: the button asks first, naming what differs, and the form
		// asks again.
		markDone = markDone.WithConfirm(slack.NewConfirmationBlockObject(
			plainText(fmt.Sprintf("Ticket #%d: its records differ", a.TicketID)),
			plainText(safetext.TruncateChars(safetext.Printable(doubtText(a)), maxConfirmText-80)+
				" Mark done only with a record that proves this operation's effect."),
			plainText("Open the form"),
			plainText("Cancel"),
		).WithStyle(slack.StyleDanger))
	}
	buttons = append(buttons, markDone)
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

// doubtText says why marking a's ticket done needs a confirmation: its
// reason when that puts every record in doubt, and each record the
// evidence marks as differing, with what differs.
func doubtText(a Alert) string {
	var parts []string
	switch a.Reason {
	case proof.ReasonMultipleMatches:
		parts = append(parts, fmt.Sprintf("The provider holds %d records for this operation and nothing in the evidence tells which one is its effect.", len(a.RecordIDs)))
	case proof.ReasonPayloadMismatch:
		parts = append(parts, "The provider's record differs from what the workflow meant to send.")
	}
	if len(a.Doubts) > 0 {
		parts = append(parts, "In the evidence, "+strings.Join(a.Doubts, "; ")+".")
	}
	return strings.Join(parts, " ")
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
func reasonWords(r proof.Reason) string {
	switch r {
	case proof.ReasonNotFound:
		return "no record found"
	case proof.ReasonMultipleMatches:
		return "several records found"
	case proof.ReasonPayloadMismatch:
		return "the record differs"
	case proof.ReasonAmbiguousOwner:
		return "the record could be another operation's"
	case proof.ReasonLookupFailed:
		return "the lookup failed"
	case proof.ReasonLookupUnsupported:
		return "the provider cannot search"
	case proof.ReasonInvalidOperation:
		return "the ledger row cannot be looked up"
	case proof.ReasonInFlight:
		return "still in flight at the provider"
	case proof.ReasonProviderFailed:
		return "the provider reports the attempt failed"
	case proof.ReasonProviderReversed:
		return "the provider reports it refunded or disputed"
	case proof.ReasonDuplicateEffect:
		return "done, but found more than once at the provider"
	case proof.ReasonEffectAfterFailed:
		return "marked failed, but found at the provider"
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
	if a.LookupErrors > 0 || a.Reason == proof.ReasonLookupFailed {
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
