package silence_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// reachKnown is a configuration of four providers, two workflows and two
// owners (the open tickets' is U0OWNER).
var reachKnown = silence.Known{Providers: []string{"stripe", "sms", "email", "push"}, Workflows: []string{"billing", "signup"},
	Owners: []string{"U0OPS", "U024BE7LH"}}

// TestSilenceNeverHoldsEverything: a silence whose matchers match any
// value of their labels — by the values sweeper knows (the configured
// providers, its reasons, the configured workflows and owners, the open
// tickets') and by values made up in each label's shape — is refused
// unless forced, saying how much it would hold; forced, it is added with
// that as a warning. One that names a part of what exists is added.
func TestSilenceNeverHoldsEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	s := silence.NewStore(pool)
	for i, p := range []string{"stripe", "sms", "email"} {
		openTicket(t, pool, fmt.Sprintf("everything-%d", i), []string{"billing", "signup"}[i%2], p)
	}
	now := time.Now()
	for _, tc := range []struct {
		desc     string
		matchers []string
		refused  bool
	}{
		{"any provider", []string{"provider=~.+"}, true},
		{"any reason", []string{"reason=~.+"}, true},
		{"any workflow", []string{"workflow=~.+"}, true},
		{"any owner but those with an x", []string{"owner=~[^x]*[^x]"}, true},
		{"any owner shaped as a Slack user", []string{"owner=~[UW][A-Z0-9]+"}, true},
		{"any level", []string{"escalation_level=~[0-9]+"}, true},
		{"every configured provider by name", []string{"provider=~stripe|sms|email|push"}, true},
		{"every reason by name", []string{"reason=~not_found|multiple_matches|payload_mismatch|ambiguous_owner|lookup_failed|" +
			"lookup_unsupported|invalid_operation|in_flight|provider_failed|provider_reversed|duplicate_effect|effect_after_failed"}, true},
		{"two that match anything together", []string{"provider=~.+", "workflow=~.+"}, true},
		{"every workflow there is, and made-up ones not", []string{"workflow=~[a-z]+"}, true},
		{"one provider", []string{"provider=stripe"}, false},
		{"one provider by a pattern", []string{"provider=~stri.*"}, false},
		{"one reason", []string{"reason=not_found"}, false},
		{"some workflows", []string{"workflow=~bill.*"}, false},
		{"one owner", []string{"owner=U0OWNER"}, false},
		{"some levels of one provider", []string{"provider=sms", "escalation_level=~[2-9]"}, false},
		{"any provider, one workflow", []string{"provider=~.+", "workflow=billing"}, false},
		{"three providers of four", []string{"provider=~stripe|sms|email"}, false},
	} {
		req := silence.Request{Matchers: tc.matchers, End: "2h", By: "U0OPS", Comment: tc.desc}
		added, plan, err := s.Request(ctx, req, reachKnown, now)
		if !tc.refused {
			if err != nil || added.ID == 0 || len(plan.Warnings) != 0 {
				t.Errorf("%s %v: %+v, %v; want it added", tc.desc, tc.matchers, plan, err)
			}
			continue
		}
		if !errors.Is(err, silence.ErrHoldsEverything) || !errors.Is(err, silence.ErrInvalid) || added.ID != 0 {
			t.Errorf("%s %v: %+v, %v; want ErrSilenceHoldsEverything", tc.desc, tc.matchers, added, err)
			continue
		}
		if want := "would hold all 3 open tickets and all 4 providers"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", tc.desc, err, want)
		}
		req.Force = true
		added, plan, err = s.Request(ctx, req, reachKnown, now)
		if err != nil || added.ID == 0 || len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], "would hold all 3 open tickets") {
			t.Errorf("%s forced: %+v, %+v, %v; want it added with a warning", tc.desc, added, plan, err)
		}
	}
}

// TestSilenceHoldsEverythingTogether: with open tickets of three
// providers, a silence whose matchers together match every open ticket
// and every configured provider is refused unless forced, naming how
// many tickets and providers it would hold — though no matcher of it
// matches every value its label could take; one that leaves one ticket
// out is added.
func TestSilenceHoldsEverythingTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	s := silence.NewStore(pool)
	for i, p := range []string{"stripe", "sms", "email", "stripe", "sms"} {
		openTicket(t, pool, fmt.Sprintf("together-%d", i), []string{"billing", "signup"}[i%2], p)
	}
	known := silence.Known{Providers: []string{"stripe", "sms", "email"}, Workflows: []string{"billing", "signup"}}
	req := silence.Request{Matchers: []string{"provider=~stripe|sms|email", "workflow=~[a-z]+"}, End: "2h", By: "U0OPS", Comment: "all"}
	_, _, err := s.Request(ctx, req, known, time.Now())
	if !errors.Is(err, silence.ErrHoldsEverything) || !strings.Contains(err.Error(), "would hold all 5 open tickets and all 3 providers") {
		t.Fatalf("every open ticket: %v; want ErrSilenceHoldsEverything naming 5 tickets and 3 providers", err)
	}
	req.Force = true
	added, plan, err := s.Request(ctx, req, known, time.Now())
	if err != nil || plan.OpenTickets != 5 || len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], "all 5 open tickets") {
		t.Fatalf("forced: %+v, %+v, %v", added, plan, err)
	}
	for _, m := range [][]string{{"provider=~stripe|sms", "workflow=~[a-z]+"}, {"workflow=billing"}, {"reason=not_found"}} {
		req := silence.Request{Matchers: m, End: "2h", By: "U0OPS", Comment: "part"}
		if _, plan, err := s.Request(ctx, req, known, time.Now()); err != nil || len(plan.Warnings) != 0 {
			t.Errorf("%v: %+v, %v; want it added", m, plan, err)
		}
	}
}

// TestSilenceReachOverMadeUpValues tries to find a pattern the rule lets
// through although it matches every value of its label: patterns built at
// random from pieces that match much (.+, classes, negated classes,
// alternations), each checked by PostgreSQL against values made up anew
// here (other seeds, other lengths than the rule's own); a pattern that
// matches all of them must be refused.
func TestSilenceReachOverMadeUpValues(t *testing.T) {
	ctx := context.Background()
	s := silence.NewStore(dbtest.Tx(t))
	rng := rand.New(rand.NewPCG(20261204, 9))
	pieces := []string{".", ".+", ".*", "[^x]", "[^x]*", "[^q]+", "\\S", "\\S*", "[[:alnum:]]", "[[:alnum:]_-]*", "[A-Za-z0-9]*",
		"[a-z]", "[A-Z]", "[0-9]", "_", "(.|\\s)*", "[^\\n]*", "\\w*", "[UW]", "[^ ]*", "(a|.)", "[[:print:]]*"}
	fresh := map[string][]string{
		"workflow":         madeUp(rng, 400, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-./:éßжö中文🙂"),
		"owner":            slackIDs(rng, 200),
		"escalation_level": levels(),
	}
	refusedSome, allowedSome := 0, 0
	for i := range 300 {
		var p strings.Builder
		for range 1 + rng.IntN(3) {
			p.WriteString(pieces[rng.IntN(len(pieces))])
		}
		name := []string{"workflow", "owner", "escalation_level"}[i%3]
		m := silence.Matcher{Name: name, Op: silence.MatchRegexp, Value: p.String()}
		missed, err := s.Unmatched(ctx, []silence.Matcher{m}, name, fresh[name])
		if err != nil {
			t.Fatal(err)
		}
		ns, err := silence.ParseRequest(silence.Request{Matchers: []string{m.String()}, End: "2h", By: "U0OPS", Comment: "generated"}, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		plan, err := s.Plan(ctx, ns, reachKnown, false, time.Now())
		refused := errors.Is(err, silence.ErrHoldsEverything) ||
			errors.Is(err, silence.ErrInvalid) && strings.Contains(err.Error(), "would match everything") // it matches ""
		if err != nil && !refused && !errors.Is(err, silence.ErrMatchesNothing) {
			t.Fatalf("%s: %v", m, err)
		}
		switch {
		case missed == 0 && !refused:
			t.Errorf("%s matches every one of %d made-up %s values, and the rule lets it through: %+v", m, len(fresh[name]), name, plan)
		case refused:
			refusedSome++
		default:
			allowedSome++
		}
	}
	if refusedSome == 0 || allowedSome == 0 {
		t.Errorf("the generated patterns were %d refused, %d allowed: the property tried only one side", refusedSome, allowedSome)
	}
}

// madeUp are n strings of runes of alphabet, of lengths from 1 to 300.
func madeUp(rng *rand.Rand, n int, alphabet string) []string {
	runes := []rune(alphabet)
	out := make([]string, n)
	for i := range out {
		b := make([]rune, 1+rng.IntN(300))
		for j := range b {
			b[j] = runes[rng.IntN(len(runes))]
		}
		out[i] = string(b)
	}
	return out
}

func slackIDs(rng *rand.Rand, n int) []string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]string, n)
	for i := range out {
		b := []byte{"UW"[rng.IntN(2)]}
		for range 2 + rng.IntN(12) {
			b = append(b, chars[rng.IntN(len(chars))])
		}
		out[i] = string(b)
	}
	return out
}

func levels() []string {
	var out []string
	for i := range 40 {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// TestSilencePatternCost: a pattern is checked for cost before it is
// stored: a back-reference (which PostgreSQL matches by trying every way
// to split the value: seconds on 42 characters) is refused before the
// database sees it; a pattern PostgreSQL cannot compile and match on a
// 1 KiB value within silence.PatternBudget is refused, and refusing it
// takes about the budget, not the pattern's cost; a pattern that would
// leave its anchors (its parentheses unbalanced on their own) is refused.
func TestSilencePatternCost(t *testing.T) {
	ctx := context.Background()
	s := silence.NewStore(dbtest.Tx(t))
	ok := silence.NewSilence{Matchers: []silence.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "cost"}
	for _, tc := range []struct {
		pattern string
		want    string // "" when allowed
	}{
		{`(.*)(.*)(.*)(.*)(.*)(.*)\1\2\3\4\5\6`, "back-reference"},
		{`(a)\1`, "back-reference"},
		{`x(b+)y\12`, "back-reference"},
		{`(.{0,100}){0,60}`, "too costly"},
		{`a)|(?:.`, "not a PostgreSQL regular expression"},
		{strings.Repeat("a", 501), "at most 500 bytes"},
		{`log\\1n`, ""}, // a backslash, then 1: no back-reference
		{`bill(ing|s)?`, ""},
		{`(bill|invoice)s?-v[0-9]+`, ""},
		{`[0-9]{1,20}`, ""},
	} {
		ns := ok
		ns.Matchers = append(ns.Matchers[:1:1], silence.Matcher{Name: "workflow", Op: silence.MatchRegexp, Value: tc.pattern})
		start := time.Now()
		err := s.Check(ctx, ns)
		took := time.Since(start)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%.40s: %v; want it allowed", tc.pattern, err)
			}
			continue
		}
		if !errors.Is(err, silence.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40s: %v; want ErrInvalidSilence saying %q", tc.pattern, err, tc.want)
		}
		if took > silence.PatternBudget+time.Second {
			t.Errorf("%.40s: refusing it took %s; the budget is %s", tc.pattern, took, silence.PatternBudget)
		}
		if _, err := silence.ParseMatcher("workflow=~" + tc.pattern); tc.want == "back-reference" && !errors.Is(err, silence.ErrInvalid) {
			t.Errorf("%.40s: ParseMatcher accepts a back-reference: %v", tc.pattern, err)
		}
	}
}
