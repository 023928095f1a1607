package silence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/review"
)

// A person asks for a silence from the CLI (`sweeper silences add`) or the
// review page; both read and check what was typed here, by the same rules:
// [ParseRequest] what needs no database, [Store.Plan] the
// rest, [Store.Request] both and the insert.

// LongSilence is past how long adding a silence warns: a silence that long
// is easy to forget.
const LongSilence = 24 * time.Hour

// Request is a silence as a person types it.
type Request struct {
	// Matchers are NAME=VALUE or NAME=~PATTERN, one each.
	Matchers []string
	// Start is a time or a duration from now ([ParseAhead]); "": now.
	Start string
	// End is a time or a duration from now. Required.
	End string
	// By is the author, a Slack user id.
	By string
	// Comment says why.
	Comment string
	// Force adds, with a warning, a silence that matches no open ticket
	// and names no known provider or workflow ([ErrMatchesNothing]),
	// or one that would hold every ticket ([ErrHoldsEverything]).
	Force bool
}

// ErrMatchesNothing: the silence asked for matches no open ticket
// and names no configured provider or known workflow — a typo, most
// likely; refused unless forced. A *[RefusedError] that matches it
// matches [ErrInvalid] too.
var ErrMatchesNothing = errors.New("it matches no open ticket, and names no configured provider or known workflow (a typo?)")

// Known are the providers, workflows and owners the configuration names
// (its providers; the workflows of its owners and channels; its owners,
// reviewers and escalation owners). The labels of the open tickets count
// as known too.
type Known struct {
	Providers []string
	Workflows []string
	Owners    []string
}

// Plan is a silence checked and ready to add: the silence, how
// many open tickets it matches now, and what its author should be warned
// of.
type Plan struct {
	Silence     NewSilence
	OpenTickets int64
	Warnings    []string
}

// ParseAhead reads a time a person gives for something to come: RFC 3339,
// a date and time without a zone, or a date (midnight), both in UTC; or a
// duration after now — Go's (90m, 2h) or whole days (1d).
func ParseAhead(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		d, err = time.ParseDuration(days + "h")
		d *= 24
	}
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("%q is neither a duration from now (2h, 1d) nor a time (2026-11-29T10:00:00Z)", s)
	case d <= 0:
		return time.Time{}, fmt.Errorf("%q: a duration from now is positive", s)
	}
	return now.Add(d), nil
}

// ParseRequest reads req at now into a silence and checks what
// needs no database: at least one matcher, each well formed, an end and a
// start that read, an author, a comment. Its error wraps
// [ErrInvalid] and says every problem.
func ParseRequest(req Request, now time.Time) (NewSilence, error) {
	ns := NewSilence{CreatedBy: strings.TrimSpace(req.By), Comment: req.Comment}
	var errs []error
	for _, a := range req.Matchers {
		m, err := parseMatcher(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ns.Matchers = append(ns.Matchers, m)
	}
	if len(req.Matchers) == 0 {
		errs = append(errs, errNoMatchers)
	}
	var err error
	if strings.TrimSpace(req.End) == "" {
		errs = append(errs, errNoEnd)
	} else if ns.EndsAt, err = ParseAhead(req.End, now); err != nil {
		errs = append(errs, fmt.Errorf("its end: %w", err))
	}
	if strings.TrimSpace(req.Start) != "" {
		if ns.StartsAt, err = ParseAhead(req.Start, now); err != nil {
			errs = append(errs, fmt.Errorf("its start: %w", err))
		}
	}
	errs = append(errs, ns.fieldProblems(false)...)
	if err := refused(errs...); err != nil {
		return NewSilence{}, err
	}
	return ns, nil
}

var (
	errNoMatchers = errors.New("no matchers: a silence without matchers would hold every notification; name a provider, workflow, reason, owner or escalation_level")
	errNoEnd      = errors.New("an end is required: a silence always expires (a time, or a duration from now such as 2h)")
)

// fieldProblems are what can be said of ns without the database but its
// matchers' presence and form when matchers is false (the caller said
// them).
func (ns NewSilence) fieldProblems(matchers bool) []error {
	var errs []error
	if matchers {
		if len(ns.Matchers) == 0 {
			errs = append(errs, errNoMatchers)
		}
		for _, m := range ns.Matchers {
			if err := m.check(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if !SlackUserRE.MatchString(ns.CreatedBy) {
		errs = append(errs, fmt.Errorf("author %q: want a Slack user id (U… or W…)", ns.CreatedBy))
	}
	if strings.TrimSpace(ns.Comment) == "" {
		errs = append(errs, errors.New("a comment is required: why the notifications are held"))
	}
	if matchers && ns.EndsAt.IsZero() {
		errs = append(errs, errNoEnd)
	}
	return errs
}

// Plan checks silence ns as [Store.Add] would
// ([Store.Check]), then as a person's request: one that matches no
// open ticket and names no provider or workflow known (known, or an open
// ticket's) is refused with [ErrMatchesNothing], and one that would
// hold every ticket with [ErrHoldsEverything] (saying how many open
// tickets and providers), unless force, and warned of when forced; one
// lasting more than [LongSilence] is warned of. now is the clock its
// length is measured from when it has no start. The CLI and the review
// page both come here, through [Store.Request].
func (s *Store) Plan(ctx context.Context, ns NewSilence, known Known, force bool, now time.Time) (Plan, error) {
	if err := s.Check(ctx, ns); err != nil {
		return Plan{}, err
	}
	plan := Plan{Silence: ns}
	labels, err := review.NewTickets(s.db).OpenLabels(ctx)
	if err != nil {
		return Plan{}, err
	}
	if plan.OpenTickets, err = s.MatchCount(ctx, ns.Matchers, labels); err != nil {
		return Plan{}, err
	}
	reach, err := s.reach(ctx, ns.Matchers, known, labels)
	if err != nil {
		return Plan{}, err
	}
	var openAll int64
	for _, l := range labels {
		openAll += l.Count
	}
	// What holds everything holds what exists, too: it is said first, and
	// alone.
	all, why := holdsEverything(reach, plan.OpenTickets, openAll)
	if all {
		// Every open ticket, but one whose label is missing ("", an
		// unreadable row's): the count says what it holds.
		tickets := fmt.Sprintf("all %d open tickets", openAll)
		if plan.OpenTickets < openAll {
			tickets = fmt.Sprintf("%d of the %d open tickets", plan.OpenTickets, openAll)
		}
		err := forcible(ErrHoldsEverything, fmt.Sprintf("it would hold %s and all %d providers, and every ticket like them to come (%s)",
			tickets, providerCount(known, labels), why))
		if !force {
			return Plan{}, err
		}
		plan.Warnings = append(plan.Warnings, err.Problems...)
	}
	named, err := s.namesKnown(ctx, ns.Matchers, known, labels)
	if err != nil {
		return Plan{}, err
	}
	if plan.OpenTickets == 0 && !named && !all {
		if !force {
			return Plan{}, forcible(ErrMatchesNothing, ErrMatchesNothing.Error())
		}
		plan.Warnings = append(plan.Warnings, ErrMatchesNothing.Error())
	}
	from := ns.StartsAt
	if from.IsZero() {
		from = now
	}
	if d := ns.EndsAt.Sub(from); d > LongSilence {
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("the silence lasts %s: remember to expire it if it is done sooner", d.Round(time.Minute)))
	}
	return plan, nil
}

// namesKnown reports whether matchers name something known: they have a
// provider or workflow matcher, and each matches a provider of known or of
// an open ticket, or a workflow of known or of an open ticket.
func (s *Store) namesKnown(ctx context.Context, matchers []Matcher, known Known, labels []review.Labels) (bool, error) {
	if !slices.ContainsFunc(matchers, func(m Matcher) bool { return m.Name == "provider" || m.Name == "workflow" }) {
		return false, nil
	}
	providers, workflows := slices.Clone(known.Providers), slices.Clone(known.Workflows)
	for _, l := range labels {
		providers, workflows = append(providers, l.Provider), append(workflows, l.Workflow)
	}
	knownProvider, err := s.Matches(ctx, matchers, "provider", providers)
	if err != nil || !knownProvider {
		return false, err
	}
	return s.Matches(ctx, matchers, "workflow", workflows)
}

// Request reads req at now ([ParseRequest]), checks it
// ([Store.Plan]) and adds it: what the CLI and the review page
// call. Refusals wrap [ErrInvalid]; nothing is added then.
func (s *Store) Request(ctx context.Context, req Request, known Known, now time.Time) (Silence, Plan, error) {
	ns, err := ParseRequest(req, now)
	if err != nil {
		return Silence{}, Plan{}, err
	}
	plan, err := s.Plan(ctx, ns, known, req.Force, now)
	if err != nil {
		return Silence{}, Plan{}, err
	}
	added, err := s.Add(ctx, plan.Silence)
	return added, plan, err
}

// States are the states a silence is in ([Silence.State]), as a person
// names them.
var States = []string{Active, Pending, Expired}

// ParseStates reads states joined by commas, or "all" (nil: every
// state), as [Filter.States] takes them; false when one is no state.
func ParseStates(s string) ([]string, bool) {
	if s == "all" {
		return nil, true
	}
	var out []string
	for _, st := range strings.Split(s, ",") {
		if !slices.Contains(States, st) {
			return nil, false
		}
		out = append(out, st)
	}
	return out, true
}
