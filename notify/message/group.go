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
	// Folded counts its tickets without an alert of their own in its
	// thread (past slack.group_detail_limit): this message is theirs.
	Folded int
	// Oldest and Newest are its first and last tickets, open or resolved;
	// zero when it has none.
	Oldest, Newest GroupedTicket
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
	if total := g.Open + g.Resolved; total > 1 && g.Oldest.ID != 0 {
		blocks = append(blocks, mrkdwnSection(fmt.Sprintf("Oldest: #%d · op_key %s · opened %s\nNewest: #%d · op_key %s · opened %s",
			g.Oldest.ID, codeSpan(g.Oldest.OpKey, 200), slackDate(g.Oldest.OpenedAt),
			g.Newest.ID, codeSpan(g.Newest.OpKey, 200), slackDate(g.Newest.OpenedAt))))
	}
	where := "each ticket's alert, with its buttons, is in this thread"
	if g.Folded > 0 {
		where = fmt.Sprintf("%d tickets' alerts are in this thread; %d more are counted here only (resolve them from the CLI)",
			max(g.Open+g.Resolved-g.Folded, 0), g.Folded)
	}
	blocks = append(blocks, slack.NewContextBlock("", mrkdwn(fmt.Sprintf(
		"sweeper · alert group #%d · %s · list them all: `sweeper tickets list --group %d`", g.ID, where, g.ID))))
	return Message{Text: text, Blocks: blocks}
}
