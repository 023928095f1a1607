package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/ledger"
)

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }

func assertLedger(t *testing.T, b *bundle, opID int64, want ledger.Status) {
	t.Helper()
	op, err := ledger.NewStore(b.tx, ledger.Native()).GetByID(b.ctx, opID)
	if err != nil {
		t.Fatal(err)
	}
	if op.Status != want {
		t.Errorf("ledger status = %s, want %s", op.Status, want)
	}
}

func TestSignInThroughTheTrustedProxyOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.open(t, "who", "onboarding", "mailer")

	// The header from an address outside trusted_proxies is refused.
	c := b.as(t, "anna@example.com")
	c.remote = "192.0.2.7:4444"
	if r := c.get("/review/"); r.code != http.StatusForbidden || strings.Contains(r.body, "/review/tickets/") || c.cookie != nil {
		t.Errorf("header from an untrusted address: %d, cookie %v; want 403, nothing shown, no session", r.code, c.cookie)
	}
	// An unmapped person sees nothing.
	c = b.as(t, "mallory@example.com")
	if r := c.get("/review/"); r.code != http.StatusForbidden || strings.Contains(r.body, "/review/tickets/") {
		t.Errorf("an unmapped person: %d, want 403 and no ticket", r.code)
	}
	if r := c.get("/review/tickets/1"); r.code != http.StatusForbidden {
		t.Errorf("an unmapped person's ticket page: %d, want 403", r.code)
	}
	// Two identities in one request are none.
	c = b.as(t, "anna@example.com")
	if r := c.do(http.MethodGet, "/review/", nil, func(r *http.Request) { r.Header.Add("X-Forwarded-Email", "bob@example.com") }); r.code != http.StatusForbidden {
		t.Errorf("two identity headers: %d, want 403", r.code)
	}
	// No header, no session: not signed in.
	c = b.as(t, "")
	if r := c.get("/review/"); r.code != http.StatusUnauthorized || strings.Contains(r.body, "/review/tickets/") {
		t.Errorf("no identity: %d, want 401", r.code)
	}
	// A mapped person gets a session: signed, HttpOnly, Secure, Lax,
	// expiring; with it alone the page opens.
	c = b.as(t, "Anna@Example.com")
	if r := c.get("/review/"); r.code != http.StatusOK {
		t.Fatalf("a mapped person: %d\n%s", r.code, r.body)
	}
	ck := c.cookie
	if ck == nil || !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode || ck.MaxAge <= 0 || ck.Path != "/review/" {
		t.Fatalf("session cookie = %+v, want HttpOnly, Secure, SameSite=Lax, an expiry, path /review/", ck)
	}
	c.email = ""
	if r := c.get("/review/"); r.code != http.StatusOK || !strings.Contains(r.body, "signed in as <code>"+anna) {
		t.Errorf("with the session alone: %d", r.code)
	}
	// A cookie whose signature does not hold is no session.
	forged := *ck
	forged.Value = strings.Replace(ck.Value, ".", "x.", 1)
	c.cookie = &forged
	if r := c.get("/review/"); r.code != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d, want 401", r.code)
	}
}

func TestChangesNeedSameOriginAndTheToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "csrf", "onboarding", "mailer")
	c := b.as(t, "anna@example.com")
	c.get("/review/")
	target := fmt.Sprintf("/review/tickets/%d/ack", tk.ID)

	// Cross-origin, token and all: refused by CrossOriginProtection.
	form := url.Values{"version": {"1"}, "token": {c.token}}
	r := c.do(http.MethodPost, target, form, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") })
	if r.code != http.StatusForbidden || !strings.Contains(r.body, "another site") {
		t.Errorf("cross-origin POST: %d, want 403", r.code)
	}
	r = c.do(http.MethodPost, target, form, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") })
	if r.code != http.StatusForbidden {
		t.Errorf("POST from another origin: %d, want 403", r.code)
	}
	// Same origin without the token, or with another session's.
	r = c.do(http.MethodPost, target, url.Values{"version": {"1"}})
	if r.code != http.StatusForbidden || !strings.Contains(r.body, "did not come from this page") {
		t.Errorf("POST without the token: %d, want 403", r.code)
	}
	other := b.as(t, "anna@example.com")
	other.get("/review/")
	r = c.do(http.MethodPost, target, url.Values{"version": {"1"}, "token": {other.token}})
	if r.code != http.StatusForbidden {
		t.Errorf("POST with another session's token: %d, want 403", r.code)
	}
	// A change by GET does not exist.
	if r := c.get(target); r.code == http.StatusSeeOther || r.code == http.StatusOK {
		t.Errorf("GET on an action: %d", r.code)
	}
	if got := b.ticket(t, tk.ID); got.AcknowledgedBy != "" || got.Version != tk.Version {
		t.Fatalf("a refused request changed the ticket: %+v", got)
	}
	if got := b.outbox(t, tk.ID); len(got) != 1 {
		t.Errorf("a refused request wrote to the outbox: %v", got)
	}
	// The same request, same origin and with the token, is applied.
	r = c.do(http.MethodPost, target, form, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-origin") })
	if r.code != http.StatusSeeOther {
		t.Errorf("the same request, same-origin: %d, want 303", r.code)
	}
}

func TestViewerAndNonOwnerCannotAct(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "roles", "onboarding", "mailer") // anna's
	for _, tc := range []struct {
		desc, email string
		want        int
	}{
		{"a viewer", "vera@example.com", http.StatusForbidden},
		// A refused action redirects too, saying why.
		{"neither owner nor reviewer", "eve@example.com", http.StatusSeeOther},
		{"a reviewer", "lead@example.com", http.StatusSeeOther},
	} {
		c := b.as(t, tc.email)
		page := c.get(fmt.Sprintf("/review/tickets/%d", tk.ID))
		if page.code != http.StatusOK {
			t.Fatalf("%s sees the ticket: %d", tc.desc, page.code)
		}
		if acts := strings.Contains(page.body, `id="ack"`); acts != (tc.email == "lead@example.com") {
			t.Errorf("%s: the page offers the actions: %v", tc.desc, acts)
		}
		r := c.post(fmt.Sprintf("/review/tickets/%d/note", tk.ID), url.Values{"version": {"1"}, "note": {"from " + tc.desc}})
		if r.code != tc.want {
			t.Errorf("%s: note answered %d, want %d", tc.desc, r.code, tc.want)
		}
		if tc.email == "eve@example.com" {
			if page := c.follow(r); !strings.Contains(page.body, "may not act") {
				t.Errorf("%s: the page after a refused note does not say why:\n%s", tc.desc, page.body)
			}
		}
	}
	evs, err := b.store.Events(b.ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Actor != "slack:"+lead {
		t.Errorf("events = %+v, want opened and the reviewer's note only", evs)
	}
	// A viewer's bulk action is refused whole.
	c := b.as(t, "vera@example.com")
	r := c.post("/review/bulk", url.Values{"id": {fmt.Sprint(tk.ID)}, "action": {"ack"}})
	if r.code != http.StatusForbidden || b.ticket(t, tk.ID).AcknowledgedBy != "" {
		t.Errorf("a viewer's bulk: %d", r.code)
	}
}

func TestErrorsArePages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.as(t, "anna@example.com")
	for _, target := range []string{"/review/nowhere", "/review/tickets/0", "/review/tickets/1/2/3"} {
		r := c.get(target)
		if r.code != http.StatusNotFound || !strings.Contains(r.hdr.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "<h1>") {
			t.Errorf("GET %s: %d %q, want a 404 page", target, r.code, r.hdr.Get("Content-Type"))
		}
	}
	if r := c.get("/review/static/style.css"); r.code != http.StatusOK || !strings.Contains(r.hdr.Get("Content-Type"), "text/css") {
		t.Errorf("the stylesheet: %d %s", r.code, r.hdr.Get("Content-Type"))
	}
}
