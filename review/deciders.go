package review

// Deciders is the one rule of who may decide on a ticket, whatever the
// surface a person acts from (Slack's buttons, the review page): the
// ticket's owner, or any of the reviewers (slack.reviewers), who may act on
// every ticket. People are named by their Slack user id. The zero value
// admits owners only.
type Deciders struct {
	reviewers map[string]bool
}

// NewDeciders returns the rule with reviewers, Slack user ids, allowed on
// every ticket besides its owner.
func NewDeciders(reviewers []string) Deciders {
	d := Deciders{reviewers: make(map[string]bool, len(reviewers))}
	for _, id := range reviewers {
		if id != "" {
			d.reviewers[id] = true
		}
	}
	return d
}

// MayAct reports whether user may decide on t as it is now: user is t's
// owner or a reviewer. No one ("") may. The owner changes only with the
// ticket's version, and every decision is a compare-and-set on the version
// the person saw, so a decision that takes effect was allowed against the
// owner it acts under.
func (d Deciders) MayAct(t Ticket, user string) bool {
	return user != "" && (user == t.Owner || d.reviewers[user])
}

// Reviewer reports whether user may act on every ticket.
func (d Deciders) Reviewer(user string) bool { return user != "" && d.reviewers[user] }
