package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/sweeper/sweeper/web"
)

// TestSessionCookieIsSecureOverHTTPS: on a plain loopback listener
// (InsecureCookies) the session cookie is still Secure whenever browsers
// reach the page over HTTPS: web.public_url says https, or the trusted
// proxy says X-Forwarded-Proto: https. Plain only when nothing says HTTPS.
func TestSessionCookieIsSecureOverHTTPS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, publicURL, proto string
		insecure, want         bool
	}{
		{desc: "plain loopback, nothing says HTTPS", insecure: true, want: false},
		{desc: "plain loopback, the proxy says http", insecure: true, proto: "http", want: false},
		{desc: "plain loopback, the proxy says https", insecure: true, proto: "https", want: true},
		{desc: "plain loopback, the proxy says HTTPS", insecure: true, proto: "HTTPS", want: true},
		{desc: "plain loopback, the proxies say https first", insecure: true, proto: "https, http", want: true},
		{desc: "plain loopback, public_url https", insecure: true, publicURL: "https://review.example.com", want: true},
		{desc: "plain loopback, public_url https, the proxy says http", insecure: true, publicURL: "https://review.example.com", proto: "http", want: true},
		{desc: "plain loopback, public_url http", insecure: true, publicURL: "http://127.0.0.1:8080", want: false},
		{desc: "not loopback", want: true},
		{desc: "not loopback, the proxy says http", proto: "http", want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *web.Config) { c.InsecureCookies, c.PublicURL = tc.insecure, tc.publicURL })
			c := b.as(t, "anna@example.com")
			r := c.do(http.MethodGet, "/review/", nil, func(r *http.Request) {
				if tc.proto != "" {
					r.Header.Set("X-Forwarded-Proto", tc.proto)
				}
			})
			if r.code != http.StatusOK || c.cookie == nil {
				t.Fatalf("sign in: %d, cookie %v", r.code, c.cookie)
			}
			if c.cookie.Secure != tc.want {
				t.Errorf("session cookie Secure = %v, want %v", c.cookie.Secure, tc.want)
			}
		})
	}
}

// TestForwardedProtoFromAnUntrustedPeerIsIgnored: signing in with Slack,
// where any browser may start, X-Forwarded-Proto counts only from the
// trusted proxies: from another address it does not make the cookie
// Secure (nor would it make one plain).
func TestForwardedProtoFromAnUntrustedPeerIsIgnored(t *testing.T) {
	t.Parallel()
	h, _ := slackSetup(t, func(c *web.Config) {
		c.InsecureCookies = true
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	for _, tc := range []struct {
		desc, remote, proto string
		want                bool
	}{
		{"the trusted proxy says https", "127.0.0.1:5000", "https", true},
		{"an untrusted peer says https", "192.0.2.9:5000", "https", false},
		{"the trusted proxy says nothing", "127.0.0.1:5000", "", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/review/signin", nil)
		r.RemoteAddr = tc.remote
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		cookies := w.Result().Cookies()
		if w.Code != http.StatusFound || len(cookies) != 1 {
			t.Fatalf("%s: /signin = %d, cookies %v; want a redirect to Slack with the sign-in cookie", tc.desc, w.Code, cookies)
		}
		if cookies[0].Secure != tc.want {
			t.Errorf("%s: sign-in cookie Secure = %v, want %v", tc.desc, cookies[0].Secure, tc.want)
		}
	}
}
