package silence

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHoldsEverythingRule: the rule on what the matchers miss, label by
// label: every label named matched on every value known, and on every
// value made up or every open ticket (one at least) matched.
func TestHoldsEverythingRule(t *testing.T) {
	t.Parallel()
	anyWorkflow := labelReach{Name: "workflow", Matchers: []Matcher{{"workflow", MatchRegexp, ".+"}}, MadeUp: 100}
	knownWorkflows := labelReach{Name: "workflow", Matchers: []Matcher{{"workflow", MatchRegexp, "[a-z]+"}}, MadeUp: 100, MadeUpMissed: 40}
	someWorkflows := labelReach{Name: "workflow", Matchers: []Matcher{{"workflow", MatchEqual, "billing"}}, KnownMissed: 1, MadeUp: 100, MadeUpMissed: 100}
	everyProvider := labelReach{Name: "provider", Matchers: []Matcher{{"provider", MatchRegexp, ".+"}}}
	oneProvider := labelReach{Name: "provider", Matchers: []Matcher{{"provider", MatchEqual, "sms"}}, KnownMissed: 3}
	for _, tc := range []struct {
		desc          string
		labels        []labelReach
		matched, open int64
		want          bool
		why           string
	}{
		{"no matchers", nil, 0, 0, false, ""},
		{"any workflow, no ticket open", []labelReach{anyWorkflow}, 0, 0, true, "workflow=~.+ matches any workflow"},
		{"every provider", []labelReach{everyProvider}, 2, 5, true, "provider=~.+ matches every provider"},
		{"every provider, one workflow", []labelReach{everyProvider, someWorkflows}, 2, 5, false, ""},
		{"one provider, any workflow", []labelReach{oneProvider, anyWorkflow}, 2, 5, false, ""},
		{"workflows known, some open tickets", []labelReach{knownWorkflows}, 4, 5, false, ""},
		{"workflows known, every open ticket", []labelReach{knownWorkflows}, 5, 5, true, "workflow=~[a-z]+ matches every workflow known"},
		{"workflows known, no ticket open", []labelReach{knownWorkflows}, 0, 0, false, ""},
		{"two labels, both any", []labelReach{everyProvider, anyWorkflow}, 1, 9, true, "provider=~.+ matches every provider; workflow=~.+ matches any workflow"},
	} {
		got, why := holdsEverything(tc.labels, tc.matched, tc.open)
		if got != tc.want || why != tc.why {
			t.Errorf("%s: %v, %q; want %v, %q", tc.desc, got, why, tc.want, tc.why)
		}
	}
}

// TestMadeUpValues: the values made up for the open labels are the same
// on every call, never empty, of every length up to 1 KiB and beyond
// ASCII for workflows, Slack user ids for owners; none for the labels
// whose values are known.
func TestMadeUpValues(t *testing.T) {
	t.Parallel()
	for _, name := range MatcherNames {
		if !slices.Equal(madeUpValues(name), madeUpValues(name)) {
			t.Errorf("%s: two calls made up different values", name)
		}
		if slices.Contains(madeUpValues(name), "") {
			t.Errorf("%s: an empty value made up", name)
		}
	}
	w := madeUpValues("workflow")
	longest, unicode := 0, 0
	for _, v := range w {
		longest = max(longest, utf8.RuneCountInString(v))
		if !isASCII(v) {
			unicode++
		}
	}
	if longest < 1024 || unicode < 20 || len(w) < 100 {
		t.Errorf("workflows: %d made up, the longest %d runes, %d beyond ASCII", len(w), longest, unicode)
	}
	for _, o := range madeUpValues("owner") {
		if !SlackUserRE.MatchString(o) {
			t.Errorf("owner %q is no Slack user id", o)
		}
	}
	if len(madeUpValues("provider")) != 0 || len(madeUpValues("reason")) != 0 {
		t.Error("values made up for a label whose values are known")
	}
	if got := strings.Join(madeUpValues("escalation_level")[:3], ","); got != "0,1,2" {
		t.Errorf("levels: %s...", got)
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
