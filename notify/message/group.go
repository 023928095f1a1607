package message

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/sweeper/sweeper/proof"
)

// GroupShown is how many of a group's open tickets its message lists.
const GroupShown = 5

// AlertGroup is an alert group as its message shows it.
type AlertGroup struct {
	ID       int64
	Provider string
	Reason   string
	// Open and Resolved count its tickets; Shown are the first open ones,
	// [GroupShown] at most.
	Open, Resolved int
	Shown          []GroupedTicket
}

// GroupedTicket is what a group's message shows of one open ticket.
type GroupedTicket struct {
	ID       int64
	Workflow string
	OpKey    string
	OpenedAt time.Time
}

// GroupMessage is an alert group's message: how many of its tickets are
// open and resolved, the first open ones, how to list them all; each
// ticket's alert, with its buttons, is in the thread.
func GroupMessage(g AlertGroup) Message {
	provider := codeSpan(g.Provider, 100)
	reason := reasonWords(proof.Reason(g.Reason))
	var text string
	if g.Open == 0 {
		text = fmt.Sprintf(":white_check_mark: All %d review tickets for %s, %s, are resolved.", g.Resolved, provider, reason)
	} else {
		text = fmt.Sprintf(":warning: %d review tickets open for %s: %s", g.Open, provider, reason)
		if g.Resolved > 0 {
			text += fmt.Sprintf(" (%d more resolved)", g.Resolved)
		}
		text += "."
	}
	blocks := []slack.Block{mrkdwnSection(text)}
	if len(g.Shown) > 0 {
		var lines []string
		for _, t := range g.Shown {
			lines = append(lines, fmt.Sprintf("• #%d · %s · op_key %s · opened %s", t.ID, codeSpan(t.Workflow, 100),
				codeSpan(t.OpKey, 200), slackDate(t.OpenedAt)))
		}
		if more := g.Open - len(g.Shown); more > 0 {
			lines = append(lines, fmt.Sprintf("…and %d more.", more))
		}
		blocks = append(blocks, mrkdwnSection(strings.Join(lines, "\n")))
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf(
		"sweeper · alert group #%d · each ticket's alert, with its buttons, is in this thread · list them: `sweeper tickets list --provider %s --reason %s`",
		g.ID, shellWord(g.Provider), shellWord(g.Reason)))))
	return Message{Text: text, Blocks: blocks}
}

// shellWord shows s as one word a shell reads back as s.
func shellWord(s string) string {
	s = oneLine(clip(s, 100))
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(escape(s), "'", `'\''`) + "'"
}
