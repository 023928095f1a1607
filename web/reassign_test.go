package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/web"
)

// TestReassignOnlyToSomeoneKnown: the page gives a ticket only to whom
// review.Assignees allow — with Slack on, a Slack user id the
// configuration names. An e-mail, markup or a stranger's id is refused
// with the owner's problem on the page, one ticket or in bulk, and the
// ticket keeps its owner; a known owner takes it.
func TestReassignOnlyToSomeoneKnown(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *web.Config) {
		c.Store = c.Store.WithAssignees(review.NewAssignees(true, []string{anna, bob, lead, eve}))
	})
	tk := b.open(t, "reassign-known", "onboarding", "mailer") // Anna's
	c := b.as(t, "anna@example.com")
	for _, tc := range []struct{ desc, to, why string }{
		{"an e-mail", "ben@example.com", "must be a Slack user id"},
		{"markup", "<svg/onload=alert(4)>", "must be a Slack user id"},
		{"a stranger's Slack id", "U0STRANGER", "U0STRANGER is no one sweeper knows"},
	} {
		r := c.post(fmt.Sprintf("/review/tickets/%d/reassign", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}, "new_owner": {tc.to}})
		if r.code != http.StatusBadRequest || !strings.Contains(html.UnescapeString(r.body), tc.why) {
			t.Errorf("%s: %d, want 400 saying %q:\n%.400s", tc.desc, r.code, tc.why, r.body)
		}
		if strings.Contains(r.body, "<svg") {
			t.Errorf("%s: the owner asked for is on the page as markup", tc.desc)
		}
		r = c.post("/review/bulk", url.Values{"id": {fmt.Sprint(tk.ID)}, "action": {"reassign"}, "new_owner": {tc.to}})
		if got := results(r.body); got[tk.ID] != "refused" {
			t.Errorf("%s in bulk: results %v, want ticket %d refused", tc.desc, got, tk.ID)
		}
	}
	if got := b.ticket(t, tk.ID); got.Owner != anna || got.Version != tk.Version {
		t.Fatalf("ticket after the refusals = owner %s, version %d; want %s, %d", got.Owner, got.Version, anna, tk.Version)
	}
	r := c.post(fmt.Sprintf("/review/tickets/%d/reassign", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}, "new_owner": {eve}})
	if r.code != http.StatusSeeOther || b.ticket(t, tk.ID).Owner != eve {
		t.Errorf("reassign to a known person: %d, owner %s; want 303 and %s", r.code, b.ticket(t, tk.ID).Owner, eve)
	}
}
