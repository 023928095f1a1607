package settle

import (
	"sync/atomic"

	"github.com/sweeper/sweeper/review"
)

// Policies are the review and escalation policies a running daemon
// decides by, which a configuration reload replaces whole
// ([Policies.Set]). Each decision reads them once, so one under way
// finishes under the policies it began with, and the next takes the new
// ones. The zero value is not usable: use [NewPolicies].
type Policies struct {
	current atomic.Pointer[policyPair]
}

type policyPair struct {
	review     review.Policy
	escalation review.Escalation
}

// NewPolicies returns p and e, to be replaced later.
func NewPolicies(p review.Policy, e review.Escalation) *Policies {
	ps := &Policies{}
	ps.Set(p, e)
	return ps
}

// Set replaces both policies at once. The caller gives up p's and e's
// maps and slices: they are read from here on, never written.
func (ps *Policies) Set(p review.Policy, e review.Escalation) {
	ps.current.Store(&policyPair{review: p, escalation: e})
}

// Review is the review policy now.
func (ps *Policies) Review() review.Policy { return ps.current.Load().review }

// Escalation is the escalation policy now.
func (ps *Policies) Escalation() review.Escalation { return ps.current.Load().escalation }
