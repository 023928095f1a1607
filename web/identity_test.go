package web_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/web"
)

// TestProxyIdentitiesCompareAsWritten: the e-mail a trusted proxy names
// is matched against web.users with ASCII letters alone folded. An
// address that Unicode case mapping would turn into a mapped one — the
// Kelvin sign for k, U+0130 for i — names nobody: it gets no session and
// acts on nothing, not even as a reviewer (Kate) on another owner's
// ticket. Non-ASCII letters in a mapped address compare exactly.
func TestProxyIdentitiesCompareAsWritten(t *testing.T) {
	t.Parallel()
	const kate, sam, iris, jose = "U0KATE", "U0SAM", "U0IRIS", "U0JOSE"
	b := setup(t, func(c *web.Config) {
		c.Users = maps.Clone(users)
		c.Users["kate@example.com"] = kate
		c.Users["sam@example.com"] = sam
		c.Users["iris@example.com"] = iris
		c.Users["jos\u00e9@example.com"] = jose // precomposed é
		c.Deciders = review.NewDeciders([]string{lead, kate})
	})
	tk := b.open(t, "kelvin", "onboarding", "mailer") // Anna's
	for _, tc := range []struct{ desc, email string }{
		{"the Kelvin sign for k", "\u212Aate@example.com"},
		{"the Kelvin sign in the domain", "kate@e\u212Aample.com"},
		{"the long s for s", "\u017Fam@example.com"},
		{"dotted capital I for i", "\u0130ris@example.com"},
		{"dotless i for i", "\u0131ris@example.com"},
		{"fullwidth k for k", "\uFF4Bate@example.com"},
		{"fullwidth capital K for k", "\uFF2Bate@example.com"},
		{"a capital É for é", "JOS\u00c9@example.com"},
		{"e and a combining accent for é", "jose\u0301@example.com"},
		{"e alone for é", "jose@example.com"},
	} {
		c := b.as(t, tc.email)
		if r := c.get("/review/"); r.code != http.StatusForbidden || c.cookie != nil || strings.Contains(r.body, "/review/tickets/") {
			t.Errorf("%s (%q): %d, cookie %v; want 403, no session, nothing shown", tc.desc, tc.email, r.code, c.cookie)
		}
		form := url.Values{"version": {fmt.Sprint(tk.Version)}}
		if r := c.post(fmt.Sprintf("/review/tickets/%d/ack", tk.ID), form); r.code != http.StatusForbidden {
			t.Errorf("%s (%q): ack on Anna's ticket: %d, want 403", tc.desc, tc.email, r.code)
		}
	}
	if got := b.ticket(t, tk.ID); got.AcknowledgedBy != "" || got.Version != tk.Version {
		t.Errorf("Anna's ticket after the look-alikes = acknowledged by %q, version %d; want untouched", got.AcknowledgedBy, got.Version)
	}
	for _, tc := range []struct{ desc, email, want string }{
		{"ASCII capitals fold", "KATE@EXAMPLE.COM", kate},
		{"the mapped address itself", "kate@example.com", kate},
		{"ASCII capitals fold beside an exact é", "JOS\u00e9@EXAMPLE.com", jose},
		{"spaces around are trimmed", "  iris@example.com ", iris},
	} {
		c := b.as(t, tc.email)
		if r := c.get("/review/"); r.code != http.StatusOK || !strings.Contains(r.body, "signed in as <code>"+tc.want) {
			t.Errorf("%s (%q): %d, want signed in as %s", tc.desc, tc.email, r.code, tc.want)
		}
	}
}

// TestUsersThatFoldTogetherAreRefused: two web.users keys that are one
// address once ASCII letters are folded, for two different people, make
// the page refuse to start, naming both; for the same person they are one.
func TestUsersThatFoldTogetherAreRefused(t *testing.T) {
	t.Parallel()
	cfg := web.Config{Store: &review.Store{}, Reader: &review.Reader{}, ProxyHeader: "X-Forwarded-Email",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, CookieKey: []byte(strings.Repeat("k", 32))}
	cfg.Users = map[string]string{"Anna@example.com": anna, "anna@example.com": bob}
	_, err := web.New(cfg)
	if err == nil || !strings.Contains(err.Error(), `"Anna@example.com"`) || !strings.Contains(err.Error(), `"anna@example.com"`) {
		t.Errorf("two people under one address: %v, want an error naming both keys", err)
	}
	cfg.Users = map[string]string{"Anna@example.com": anna, "anna@example.com": anna, "\u212Aate@example.com": bob, "kate@example.com": lead}
	if _, err := web.New(cfg); err != nil {
		t.Errorf("one person twice, and the Kelvin sign beside k: %v, want no error", err)
	}
}
