package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/web"
)

// silenceRowRE finds the silences a page lists, by id.
var silenceRowRE = regexpMust(`<tr id="silence-(\d+)">`)

func silencesListed(body string) []string {
	var ids []string
	for _, m := range silenceRowRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// TestReviewerAddsAndExpiresASilence: a reviewer adds a silence from the
// page — matchers as lines and as fields, the end, the comment — by
// themselves whatever the form says; it is listed, on the silences page
// and the queue, with an Expire button that ends it.
func TestReviewerAddsAndExpiresASilence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.as(t, "lead@example.com")
	r := c.get("/review/")
	if r.code != http.StatusOK || !strings.Contains(r.body, `href="/review/silences" id="silences-link"`) {
		t.Fatalf("the queue does not link a reviewer to the silences: %d", r.code)
	}
	r = c.get("/review/silences")
	if r.code != http.StatusOK || !strings.Contains(r.body, `id="silence-add"`) || len(silencesListed(r.body)) != 0 {
		t.Fatalf("silences page: %d, no add form or silences listed:\n%s", r.code, r.body)
	}
	r = c.post("/review/silences", url.Values{"matchers": {"provider=sms\r\n\r\n  workflow=~bill.*  \n"}, "matcher": {"reason=payload_mismatch"},
		"end": {" 3d "}, "comment": {"<b>sms</b> migration"}, "by": {"U0MALLORY"}, "created_by": {"U0MALLORY"}})
	if r.code != http.StatusOK {
		t.Fatalf("add: %d\n%s", r.code, r.body)
	}
	want := []web.SilenceDraft{{Matchers: []string{"reason=payload_mismatch", "provider=sms", "workflow=~bill.*"}, End: "3d",
		Comment: "<b>sms</b> migration", By: lead}}
	if diff := cmp.Diff(want, b.drafts); diff != "" {
		t.Fatalf("what the page asked (-want +got):\n%s", diff)
	}
	for _, w := range []string{`id="added"`, "Silence 101 added", "it matches 1 open ticket(s) now",
		"Warning: the silence lasts 72h0m0s", "&lt;b&gt;sms&lt;/b&gt; migration", `id="expire-101"`} {
		if !strings.Contains(r.body, w) {
			t.Errorf("after adding, the page lacks %q", w)
		}
	}
	if strings.Contains(r.body, "<b>sms</b>") || strings.Contains(r.body, "U0MALLORY") {
		t.Errorf("the comment is not escaped, or the author typed is shown:\n%s", r.body)
	}
	if got := silencesListed(c.get("/review/").body); !cmp.Equal(got, []string{"101"}) {
		t.Errorf("the queue lists silences %v, want 101", got)
	}

	r = c.post("/review/silences/101/expire", url.Values{})
	if r.code != http.StatusOK || !strings.Contains(r.body, "Silence 101 expired by "+lead) {
		t.Fatalf("expire: %d\n%s", r.code, r.body)
	}
	if got := silencesListed(r.body); len(got) != 0 {
		t.Errorf("after the expiry the page lists %v", got)
	}
	if diff := cmp.Diff([]string{"101 " + lead}, b.expiries); diff != "" {
		t.Errorf("expiries (-want +got):\n%s", diff)
	}
	r = c.post("/review/silences/101/expire", url.Values{})
	if r.code != http.StatusConflict || !strings.Contains(r.body, "Silence 101 does not exist or has ended already") {
		t.Errorf("expire again: %d, want 409 saying so", r.code)
	}
	if r := c.post("/review/silences/x/expire", url.Values{}); r.code != http.StatusNotFound {
		t.Errorf("expire a silence that is no number: %d, want 404", r.code)
	}
}

// TestSilenceRefusalsOnThePage: a silence the rules refuse is shown with
// why, in plain words, status 422, the form as typed (escaped), nothing
// added; refused for matching nothing, the form offers to force it, and
// forced it is added with a warning.
func TestSilenceRefusalsOnThePage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.as(t, "lead@example.com")
	r := c.post("/review/silences", url.Values{"matchers": {"provider=sms"}, "end": {"2h"}, "comment": {"  "}})
	if r.code != http.StatusUnprocessableEntity || !strings.Contains(r.body, "a comment is required") ||
		!strings.Contains(r.body, `name="end" value="2h"`) || strings.Contains(r.body, `id="added"`) {
		t.Errorf("no comment: %d\n%s", r.code, r.body)
	}
	r = c.post("/review/silences", url.Values{"matchers": {"provider=smss\n<i>x</i>=1"}, "end": {"2h"}, "comment": {"typo"}})
	if r.code != http.StatusUnprocessableEntity || !strings.Contains(r.body, "matches no open ticket") ||
		!strings.Contains(r.body, "add it anyway") || !strings.Contains(r.body, "provider=smss\n&lt;i&gt;x&lt;/i&gt;=1</textarea>") {
		t.Errorf("matches nothing: %d\n%s", r.code, r.body)
	}
	if l := b.silences.Load(); l != nil && len(*l) != 0 {
		t.Fatalf("refused silences were added: %+v", *l)
	}
	r = c.post("/review/silences", url.Values{"matchers": {"provider=smss"}, "end": {"2h"}, "comment": {"typo"}, "force": {"1"}})
	if r.code != http.StatusOK || !strings.Contains(r.body, "Warning: it matches no open ticket") {
		t.Errorf("forced: %d\n%s", r.code, r.body)
	}
	if len(b.drafts) != 3 || !b.drafts[2].Force || b.drafts[1].Force {
		t.Errorf("force as the hook got it: %+v", b.drafts)
	}
}

// TestSilenceHoldingEverythingOnThePage: a silence the rules refuse for
// holding every ticket is shown with why — the counts — status 422, the
// form as typed and the box to add it anyway, unticked; ticked, it is
// added with that as a warning.
func TestSilenceHoldingEverythingOnThePage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.as(t, "lead@example.com")
	r := c.post("/review/silences", url.Values{"matchers": {"provider=~.+"}, "end": {"2h"}, "comment": {"all of it"}})
	if r.code != http.StatusUnprocessableEntity || !strings.Contains(r.body, "would hold all 512 open tickets and all 4 providers") ||
		!strings.Contains(r.body, "provider=~.&#43;</textarea>") || !strings.Contains(r.body, `name="end" value="2h"`) ||
		!strings.Contains(r.body, "add it anyway") || strings.Contains(r.body, `id="force" checked`) || strings.Contains(r.body, `id="added"`) {
		t.Fatalf("holds everything: %d\n%s", r.code, r.body)
	}
	r = c.post("/review/silences", url.Values{"matchers": {"provider=~.+"}, "end": {"2h"}, "comment": {"all of it"}, "force": {"1"}})
	if r.code != http.StatusOK || !strings.Contains(r.body, `id="added"`) || !strings.Contains(r.body, "Warning: it would hold all 512 open tickets") {
		t.Errorf("forced: %d\n%s", r.code, r.body)
	}
	if len(b.drafts) != 2 || b.drafts[0].Force || !b.drafts[1].Force {
		t.Errorf("force as the hook got it: %+v", b.drafts)
	}
}

// TestOnlyReviewersChangeSilences: a viewer, a person who is no reviewer,
// a request from another site and one without the session's token are
// refused, and nothing reaches the silences; a viewer sees them without
// the buttons.
func TestOnlyReviewersChangeSilences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.silences.Store(&[]web.ListedSilence{{ID: 7, Matchers: "provider=sms", EndsAt: b.now.Add(2 * time.Hour), CreatedBy: "U0OPS", Comment: "migration"}})
	add := url.Values{"matchers": {"provider=sms"}, "end": {"2h"}, "comment": {"x"}}
	for _, email := range []string{"vera@example.com", "anna@example.com", "eve@example.com"} {
		c := b.as(t, email)
		page := c.get("/review/silences")
		if page.code != http.StatusOK || !cmp.Equal(silencesListed(page.body), []string{"7"}) ||
			strings.Contains(page.body, `id="silence-add"`) || strings.Contains(page.body, `id="expire-7"`) {
			t.Errorf("%s: silences page %d, with buttons or without the silence:\n%s", email, page.code, page.body)
		}
		if q := c.get("/review/"); strings.Contains(q.body, `id="expire-7"`) {
			t.Errorf("%s: the queue offers to expire", email)
		}
		for _, target := range []string{"/review/silences", "/review/silences/7/expire"} {
			if r := c.post(target, add); r.code != http.StatusForbidden {
				t.Errorf("%s: POST %s: %d, want 403", email, target, r.code)
			}
		}
	}
	lead := b.as(t, "lead@example.com")
	lead.get("/review/silences")
	for _, target := range []string{"/review/silences", "/review/silences/7/expire"} {
		form := url.Values{"matchers": {"provider=sms"}, "end": {"2h"}, "comment": {"x"}, "token": {lead.token}}
		if r := lead.do(http.MethodPost, target, form, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }); r.code != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d, want 403", target, r.code)
		}
		if r := lead.do(http.MethodPost, target, form, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }); r.code != http.StatusForbidden {
			t.Errorf("POST %s from another origin: %d, want 403", target, r.code)
		}
		form.Del("token")
		if r := lead.do(http.MethodPost, target, form); r.code != http.StatusForbidden || !strings.Contains(r.body, "did not come from this page") {
			t.Errorf("POST %s without the token: %d, want 403", target, r.code)
		}
	}
	if len(b.drafts) != 0 || len(b.expiries) != 0 {
		t.Errorf("refused requests reached the silences: %+v, %v", b.drafts, b.expiries)
	}
	if r := lead.get("/review/silences"); !strings.Contains(r.body, fmt.Sprintf(`id="expire-%d"`, 7)) {
		t.Errorf("a reviewer is not offered to expire:\n%s", r.body)
	}
}
