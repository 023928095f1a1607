package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/web"
)

// pageClient is one browser on the review page, signed in by the proxy.
type pageClient struct {
	t      *testing.T
	page   *web.Handler
	email  string
	cookie *http.Cookie
	token  string
}

var pageTokenRE = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`)

func (c *pageClient) do(method, target string, form url.Values, edit ...func(*http.Request)) (int, string) {
	c.t.Helper()
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, "http://review.example.com"+target, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, "http://review.example.com"+target, nil)
	}
	r.RemoteAddr = "127.0.0.1:50000"
	r.Header.Set("X-Forwarded-Email", c.email)
	if c.cookie != nil {
		r.AddCookie(c.cookie)
	}
	for _, e := range edit {
		e(r)
	}
	w := httptest.NewRecorder()
	c.page.ServeHTTP(w, r)
	for _, ck := range w.Result().Cookies() {
		c.cookie = ck
	}
	if m := pageTokenRE.FindStringSubmatch(w.Body.String()); m != nil {
		c.token = m[1]
	}
	return w.Code, w.Body.String()
}

// post sends form with the session's token, the page read first.
func (c *pageClient) post(target string, form url.Values) (int, string) {
	c.t.Helper()
	if c.token == "" {
		c.do(http.MethodGet, "/review/", nil)
	}
	form.Set("token", c.token)
	return c.do(http.MethodPost, target, form)
}

// TestReviewPageSilences: on the daemon's review page a reviewer adds a
// silence into sweeper.silences, by the CLI's rules — each refusal shown
// in plain words, 422, nothing stored; matching nothing, or holding every
// ticket, refused unless forced; a long one warned of — as themselves whatever the form says; it
// is listed on the queue, and its Expire button ends it. A viewer, a
// person who is no reviewer, a request from another site or without the
// session's token change nothing.
func TestReviewPageSilences(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	ctx := context.Background()
	b.claim(t, "many-web-silence", "sim", time.Hour)
	if _, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvWebCookieKey: strings.Repeat("c", 32)}
	b.sweeper.Getenv = func(k string) string { return env[k] }
	b.sweeper.Config.Web.Enabled = true
	b.sweeper.Config.Web.TrustedProxies = []string{"127.0.0.1/32"}
	b.sweeper.Config.Web.Users = map[string]string{"lead@example.com": "U0LEAD1", "vera@example.com": "U0VERA1", "billing@example.com": "U0BILLING1"}
	b.sweeper.Config.Web.Viewers = []string{"U0VERA1"}
	b.sweeper.Config.Slack.Reviewers = []string{"U0LEAD1"}
	page, err := b.sweeper.ReviewPage()
	if err != nil {
		t.Fatal(err)
	}
	messages := silence.NewStore(b.pool)
	stored := func() []silence.Silence {
		t.Helper()
		list, err := messages.List(ctx, silence.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	lead := &pageClient{t: t, page: page, email: "lead@example.com"}

	ok := url.Values{"matchers": {"provider=sim"}, "end": {"2h"}, "comment": {"sim migration"}}
	for _, tc := range []struct {
		desc string
		set  url.Values
		want string
	}{
		{"no matchers", url.Values{"matchers": {" \n "}}, "no matchers"},
		{"a matcher without =", url.Values{"matchers": {"sim"}}, "want name=value or name=~pattern"},
		{"an unknown label", url.Values{"matchers": {"recipient=jane"}}, "no label"},
		{"no end", url.Values{"end": {""}}, "an end is required"},
		{"an end that does not read", url.Values{"end": {"soon"}}, "neither a duration"},
		{"an end in the past", url.Values{"end": {"2020-01-01"}}, "after its start"},
		{"past 14 days", url.Values{"end": {"15d"}}, "a silence lasts at most 336h0m0s"},
		{"a pattern PostgreSQL cannot read", url.Values{"matchers": {"provider=sim\nworkflow=~bill(ing"}}, "not a PostgreSQL regular expression"},
		{"matchers that match everything", url.Values{"matchers": {"provider=~.*"}}, "would match everything"},
		{"no comment", url.Values{"comment": {"  "}}, "a comment is required"},
		{"matches nothing known", url.Values{"matchers": {"provider=smss"}}, "it matches no open ticket, and names no configured provider or known workflow"},
		{"holds every ticket", url.Values{"matchers": {"workflow=~.+"}}, "it would hold all 1 open tickets and all 1 providers"},
	} {
		form := url.Values{}
		for k, v := range ok {
			form[k] = v
		}
		for k, v := range tc.set {
			form[k] = v
		}
		code, body := lead.post("/review/silences", form)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, htmlText(tc.want)) || !strings.Contains(body, "Nothing was changed") {
			t.Errorf("%s: %d, want 422 saying %q\n%s", tc.desc, code, tc.want, body)
		}
		if (tc.desc == "matches nothing known" || tc.desc == "holds every ticket") && !strings.Contains(body, "add it anyway") {
			t.Errorf("%s: the page does not offer to force it", tc.desc)
		}
	}
	// Its Preview counts what it would hold, by the outbox's plan, and
	// adds nothing: what only force overrides is a warning there; any
	// other refusal is Add's.
	preview := url.Values{"preview": {"1"}}
	for k, v := range ok {
		preview[k] = v
	}
	if code, body := lead.post("/review/silences", preview); code != http.StatusOK ||
		!strings.Contains(body, `would hold <strong>1</strong> open ticket(s) now, of <span class="held-provider">sim (1)</span>`) ||
		!strings.Contains(body, "Warning: it would hold all 1 open tickets") {
		t.Errorf("preview: %d\n%s", code, body)
	}
	preview.Set("matchers", "provider=~(")
	if code, body := lead.post("/review/silences", preview); code != http.StatusUnprocessableEntity || !strings.Contains(body, "not a PostgreSQL regular expression") {
		t.Errorf("preview of a pattern PostgreSQL cannot read: %d\n%s", code, body)
	}
	if got := stored(); len(got) != 0 {
		t.Fatalf("refused silences were stored: %+v", got)
	}

	// A valid one, by the reviewer whatever the form says. (Its reason
	// too: with one provider, one workflow and one ticket, the provider
	// and the workflow alone would hold everything.)
	code, body := lead.post("/review/silences", url.Values{"matchers": {"provider=sim\r\nworkflow=~bill.*\r\nreason=multiple_matches"}, "end": {"2h"},
		"comment": {"<b>sim</b> migration"}, "by": {"U0MALLORY"}, "created_by": {"U0MALLORY"}})
	if code != http.StatusOK || !strings.Contains(body, "it matches 1 open ticket(s) now") || strings.Contains(body, "Warning:") {
		t.Fatalf("add: %d\n%s", code, body)
	}
	got := stored()
	if len(got) != 1 || got[0].CreatedBy != "U0LEAD1" || got[0].Comment != "<b>sim</b> migration" || got[0].State != silence.Active ||
		fmt.Sprint(got[0].Matchers) != "[provider=sim workflow=~bill.* reason=multiple_matches]" {
		t.Fatalf("stored: %+v", got)
	}
	first := got[0].ID
	if d := time.Until(got[0].EndsAt); d < 2*time.Hour-time.Minute || d > 2*time.Hour {
		t.Errorf("it ends in %s, want 2h", d)
	}
	_, queue := lead.do(http.MethodGet, "/review/", nil)
	if !strings.Contains(queue, fmt.Sprintf(`<tr id="silence-%d">`, first)) || !strings.Contains(queue, "&lt;b&gt;sim&lt;/b&gt; migration") ||
		strings.Contains(queue, "<b>sim</b>") {
		t.Errorf("the queue does not list the silence, escaped:\n%s", queue)
	}
	// Forced, and long: added, with their warnings.
	code, body = lead.post("/review/silences", url.Values{"matchers": {"provider=smss"}, "end": {"3d"}, "comment": {"planned"}, "force": {"1"}})
	if code != http.StatusOK || !strings.Contains(body, "Warning: it matches no open ticket") || !strings.Contains(body, "Warning: the silence lasts 72h0m0s") {
		t.Errorf("forced and long: %d\n%s", code, body)
	}
	if got := stored(); len(got) != 2 {
		t.Fatalf("after the forced one: %d silences stored, want 2", len(got))
	}
	code, body = lead.post("/review/silences", url.Values{"matchers": {"workflow=~.+"}, "end": {"2h"}, "comment": {"all"}, "force": {"1"}})
	if code != http.StatusOK || !strings.Contains(body, "Warning: it would hold all 1 open tickets and all 1 providers") {
		t.Errorf("forced to hold everything: %d\n%s", code, body)
	}
	if got := stored(); len(got) != 3 {
		t.Fatalf("after the forced ones: %d silences stored, want 3", len(got))
	}

	// Nobody else changes them.
	before := stored()
	for _, email := range []string{"vera@example.com", "billing@example.com"} {
		c := &pageClient{t: t, page: page, email: email}
		for _, target := range []string{"/review/silences", fmt.Sprintf("/review/silences/%d/expire", first)} {
			if code, _ := c.post(target, url.Values{"matchers": {"provider=sim"}, "end": {"2h"}, "comment": {"x"}}); code != http.StatusForbidden {
				t.Errorf("%s: POST %s: %d, want 403", email, target, code)
			}
		}
	}
	expire := fmt.Sprintf("/review/silences/%d/expire", first)
	if code, _ := lead.do(http.MethodPost, expire, url.Values{"token": {lead.token}},
		func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }); code != http.StatusForbidden {
		t.Errorf("a cross-site expiry: %d, want 403", code)
	}
	if code, _ := lead.do(http.MethodPost, expire, url.Values{}); code != http.StatusForbidden {
		t.Errorf("an expiry without the token: %d, want 403", code)
	}
	if after := stored(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("refused requests changed the silences:\n%+v\nwant\n%+v", after, before)
	}

	// The reviewer expires it: it leaves the list.
	code, body = lead.post(expire, url.Values{})
	if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf("Silence %d expired by U0LEAD1", first)) {
		t.Fatalf("expire: %d\n%s", code, body)
	}
	si, err := messages.Get(ctx, first)
	if err != nil || si.State != silence.Expired || si.ExpiredBy != "U0LEAD1" {
		t.Errorf("after the expiry: %+v, %v", si, err)
	}
	if _, queue := lead.do(http.MethodGet, "/review/", nil); strings.Contains(queue, fmt.Sprintf(`<tr id="silence-%d">`, first)) {
		t.Errorf("the queue still lists silence %d", first)
	}
	if code, body := lead.post(expire, url.Values{}); code != http.StatusConflict || !strings.Contains(body, "has ended already") {
		t.Errorf("expire again: %d, want 409", code)
	}
}

// htmlText is s as the page writes it.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}
