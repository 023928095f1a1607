package message

import (
	"fmt"
	"strconv"
	"time"

	"github.com/slack-go/slack"
)

// Incident is a provider's outage as sweeper.incidents records it, with
// what became of the provider's operations since it began.
type Incident struct {
	ID        int64
	Provider  string
	StartedAt time.Time
	// EndedAt is zero while the provider is down.
	EndedAt time.Time
	// Waiting is how many of the provider's operations were pending when
	// it went down.
	Waiting int
	// Settled, Review and Pending are about its backlog: the provider's
	// operations written (created) before it ended, those written while it
	// lasted included; what was written after is not counted, so the counts
	// stop changing once the backlog has settled, whatever work came after.
	// Settled is how many of them were settled (done or failed) since it
	// went down; Review how many review tickets were opened for them since;
	// Pending how many are still pending now.
	Settled, Review, Pending int
	// MovedToReview is how many of its waiting operations were moved to
	// review, as lookup_failed tickets, because the provider was down for
	// longer than MovedAfter (its max_outage); they count in Review too.
	MovedToReview int
	MovedAfter    time.Duration
}

// IncidentPost is the message of an incident's outbox row: as a root —
// the incident's start, or its end posted as a new root (its start never
// reached Slack, or was removed) — its root message ([IncidentMessage]);
// otherwise, for its end, the closing reply in its thread
// ([IncidentClosedReply]) with the root edited to the incident as it ended.
func IncidentPost(in Incident, asRoot bool) Post {
	root := IncidentMessage(in)
	if asRoot {
		return root.Post()
	}
	reply := IncidentClosedReply(in)
	return Post{Text: reply.Text, Blocks: reply.Blocks, RootEdit: &RootEdit{Text: root.Text, Blocks: root.Blocks}}
}

// IncidentMessage is an incident's root message: while the provider is
// down, since when and how many operations wait; once it is back, how long
// it was down and what became of them.
func IncidentMessage(in Incident) Message {
	provider := "*" + escape(oneLine(clip(in.Provider, 100))) + "*"
	var text string
	switch {
	case in.EndedAt.IsZero() && in.MovedToReview > 0:
		text = fmt.Sprintf(":rotating_light: %s unreachable since %s — %s waiting; %s moved to review after max_outage (%s) as lookup_failed tickets, "+
			"looked up again when it answers.",
			provider, slackDate(in.StartedAt), operations(in.Waiting), thousands(in.MovedToReview), roundDuration(in.MovedAfter))
	case in.EndedAt.IsZero():
		text = fmt.Sprintf(":rotating_light: %s unreachable since %s — %s waiting, nothing decided; lookups resume automatically.",
			provider, slackDate(in.StartedAt), operations(in.Waiting))
	default:
		text = fmt.Sprintf(":white_check_mark: %s was unreachable from %s for %s, back since %s: %s",
			provider, slackDate(in.StartedAt), roundDuration(in.EndedAt.Sub(in.StartedAt)), slackDate(in.EndedAt), countsText(in))
	}
	return Message{Text: text, Blocks: []slack.Block{
		mrkdwnSection(text),
		slack.NewContextBlock("", mrkdwn(fmt.Sprintf("sweeper · provider incident #%d · no alert is posted per operation while it lasts; "+
			"`sweeper providers` shows its health", in.ID))),
	}}
}

// IncidentClosedReply is the reply in an incident's thread when the
// provider is back, edited as its counts change.
func IncidentClosedReply(in Incident) Message {
	text := fmt.Sprintf("Back after %s: %s", roundDuration(in.EndedAt.Sub(in.StartedAt)), countsText(in))
	return Message{Text: text, Blocks: []slack.Block{mrkdwnSection(text)}}
}

// countsText is what became of the provider's operations since the
// incident began.
func countsText(in Incident) string {
	s := fmt.Sprintf("%s settled, %s need review", thousands(in.Settled), thousands(in.Review))
	if in.MovedToReview > 0 {
		s += fmt.Sprintf(" (%s moved to review after max_outage %s)", thousands(in.MovedToReview), roundDuration(in.MovedAfter))
	}
	if in.Pending > 0 {
		s += fmt.Sprintf(", %s still being looked up", thousands(in.Pending))
	}
	return s + "."
}

// operations says "1 operation" or "1,400 operations".
func operations(n int) string {
	if n == 1 {
		return "1 operation"
	}
	return thousands(n) + " operations"
}

// thousands writes n with comma separators: 1,400.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// roundDuration writes d to the second: 4m10s.
func roundDuration(d time.Duration) string {
	return max(d.Round(time.Second), 0).String()
}
