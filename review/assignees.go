package review

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// slackUserID is the shape of a Slack user id: U, or W for an Enterprise
// Grid user, then upper-case letters and digits. Slack's ids are 9 or 11
// characters today and Slack says they may grow, so up to 21 are taken.
var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// SlackUserID reports whether id is shaped like a Slack user id.
func SlackUserID(id string) bool { return slackUserID.MatchString(id) }

// Assignees is the one rule of whom a ticket may be given to, whatever
// the surface a person reassigns from (the review page, the CLI): someone
// sweeper knows — an owner the configuration names, a reviewer, a
// web.users id — and, with Slack on, only such a Slack user id. With Slack
// off, where owners may be names of the operator's choosing, a Slack user
// id nobody named is taken too (it is one person, and inert). The zero
// value knows no one, Slack off: Slack user ids only.
type Assignees struct {
	known map[string]bool
	slack bool
}

// NewAssignees returns the rule over the people sweeper knows, with Slack
// on or off.
func NewAssignees(slackOn bool, known []string) Assignees {
	a := Assignees{known: make(map[string]bool, len(known)), slack: slackOn}
	for _, id := range known {
		if id = strings.TrimSpace(id); id != "" {
			a.known[id] = true
		}
	}
	return a
}

// Assignable returns nil when a ticket may be given to owner, else an
// error naming the field ("owner: …") that says why, for the person who
// asked: no owner, one Slack user id shaped wrongly, or someone sweeper
// does not know. owner is taken as written: trim it first.
func (a Assignees) Assignable(owner string) error {
	known, shaped := a.known[owner], SlackUserID(owner)
	switch {
	case owner == "":
		return errors.New("owner: required (who takes the ticket)")
	case a.slack && !shaped:
		return fmt.Errorf("owner: must be a Slack user id (U… or W… and capital letters or digits), got %q", owner)
	case known || (shaped && !a.slack):
		return nil
	case shaped:
		return fmt.Errorf("owner: %s is no one sweeper knows: give the ticket to one of review's owners, slack.reviewers or web.users' ids", owner)
	}
	return fmt.Errorf("owner: must be a Slack user id (U… or W…) or a person the configuration names, got %q", owner)
}

// Known returns the people a names, sorted, each once: whom a person
// reassigning a ticket is offered. With Slack off a Slack user id not
// among them is assignable too, but is never offered.
func (a Assignees) Known() []string { return slices.Sorted(maps.Keys(a.known)) }
