package review_test

import (
	"strings"
	"testing"

	"github.com/sweeper/sweeper/review"
)

// TestAssignableIsOneRule: a ticket goes only to someone sweeper knows —
// with Slack on, a known Slack user id; with Slack off, a name the
// configuration gives or at least a Slack user id. An e-mail, markup, two
// people or an id shaped wrongly never become an owner.
func TestAssignableIsOneRule(t *testing.T) {
	t.Parallel()
	known := []string{"U0ANNA", "U0BOB", "W0GRID123", "ops-team"}
	on, off := review.NewAssignees(true, known), review.NewAssignees(false, known)
	for _, tc := range []struct {
		desc, owner string
		on, off     bool // assignable with Slack on, off
		why         string
	}{
		{desc: "a known owner", owner: "U0ANNA", on: true, off: true},
		{desc: "a known Enterprise Grid user", owner: "W0GRID123", on: true, off: true},
		{desc: "a Slack user id nobody named", owner: "U0NOBODY1", on: false, off: true, why: "is no one sweeper knows"},
		{desc: "a known name, Slack off", owner: "ops-team", on: false, off: true, why: "must be a Slack user id"},
		{desc: "an e-mail", owner: "ben@example.com", why: "must be a Slack user id"},
		{desc: "markup", owner: "<svg/onload=alert(4)>", why: "must be a Slack user id"},
		{desc: "two people", owner: "U0ANNA U0BOB", why: "must be a Slack user id"},
		{desc: "a lower-case id", owner: "u0anna", why: "must be a Slack user id"},
		{desc: "a channel id", owner: "C0REVIEW1", why: "must be a Slack user id"},
		{desc: "a mention", owner: "<@U0ANNA>", why: "must be a Slack user id"},
		{desc: "an id too long", owner: "U" + strings.Repeat("A", 21), why: "must be a Slack user id"},
		{desc: "a prefix alone", owner: "U", why: "must be a Slack user id"},
		{desc: "a look-alike capital", owner: "U0\u0391NNA", why: "must be a Slack user id"}, // Greek capital alpha
		{desc: "nobody", owner: "", why: "required"},
	} {
		for _, rule := range []struct {
			name string
			a    review.Assignees
			want bool
		}{{"Slack on", on, tc.on}, {"Slack off", off, tc.off}} {
			err := rule.a.Assignable(tc.owner)
			if (err == nil) != rule.want {
				t.Errorf("%s, %s: Assignable(%q) = %v, want assignable %v", tc.desc, rule.name, tc.owner, err, rule.want)
			}
			if err != nil && (!strings.HasPrefix(err.Error(), "owner: ") || !strings.Contains(err.Error(), tc.why)) {
				t.Errorf("%s, %s: Assignable(%q) = %q, want owner: … %s", tc.desc, rule.name, tc.owner, err, tc.why)
			}
		}
	}
	if err := (review.Assignees{}).Assignable("U0ANYONE"); err != nil {
		t.Errorf("the zero rule and a Slack user id: %v, want assignable", err)
	}
	if err := (review.Assignees{}).Assignable("ops-team"); err == nil {
		t.Error("the zero rule took a name it does not know")
	}
}
