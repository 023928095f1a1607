package silence

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/review"
)

// Preview is what a silence asked for would hold if it were added now.
type Preview struct {
	// Silence is the silence read from the request, as it would be added.
	Silence NewSilence
	// OpenTickets counts the open tickets it matches.
	OpenTickets int64
	// Providers are the providers of those tickets, by name ("" for a
	// ticket without one), each with how many it matches; none matched,
	// none listed.
	Providers []HeldProvider
	// Warnings are what adding it would warn of, and what only force
	// overrides: it matches nothing known, it holds every ticket.
	Warnings []string
}

// HeldProvider is how many open tickets of one provider a silence matches.
type HeldProvider struct {
	Provider string
	Tickets  int64
}

// Preview checks req at now by the rules adding it follows
// ([ParseRequest], [Store.Plan]) as if forced, and counts what it would
// hold, by the matching rule that holds notifications
// ([Store.MatchCount]). Nothing is added. A preview needs no comment, nor
// an end (then one hour is planned). What only force overrides is a
// warning of the preview, which still counts; any other refusal is a
// *[RefusedError].
func (s *Store) Preview(ctx context.Context, req Request, known Known, now time.Time) (Preview, error) {
	req.End, req.Comment = cmp.Or(req.End, "1h"), cmp.Or(req.Comment, "(a preview)")
	ns, err := ParseRequest(req, now)
	if err != nil {
		return Preview{}, err
	}
	plan, err := s.Plan(ctx, ns, known, true, now)
	if err != nil {
		return Preview{}, err
	}
	out := Preview{Silence: ns, OpenTickets: plan.OpenTickets, Warnings: plan.Warnings}
	labels, err := review.NewTickets(s.db).OpenLabels(ctx)
	if err != nil {
		return Preview{}, err
	}
	byProvider := map[string][]review.Labels{}
	for _, l := range labels {
		byProvider[l.Provider] = append(byProvider[l.Provider], l)
	}
	for _, name := range slices.Sorted(maps.Keys(byProvider)) {
		n, err := s.MatchCount(ctx, ns.Matchers, byProvider[name])
		if err != nil {
			return Preview{}, err
		}
		if n > 0 {
			out.Providers = append(out.Providers, HeldProvider{Provider: name, Tickets: n})
		}
	}
	return out, nil
}

// MatchersText shows matchers as a person types them, separated by
// spaces.
func MatchersText(ms []Matcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, " ")
}
