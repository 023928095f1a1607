package message

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/proof"
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
	s = emailPattern.ReplaceAllStringFunc(s, proof.MaskRecipient)
	return phonePattern.ReplaceAllStringFunc(s, proof.MaskRecipient)
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

// shortDuration writes a duration as people say it: 30m, 1h30m, 2h, 45s.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
