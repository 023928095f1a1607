package providers

import (
	"fmt"
	"net/http"
)

// ReadOnlyTransport refuses every request that is not a GET or HEAD before
// it leaves the process — except a search endpoint the adapter declares in
// Searches, matched exactly. Adapters that speak HTTP wrap their transport
// with it, so that no code path of theirs — a mistaken SDK call included —
// can create or send anything at a provider (I1).
type ReadOnlyTransport struct {
	// Base carries the allowed requests; http.DefaultTransport when nil.
	Base http.RoundTripper
	// Searches are the provider's search endpoints that take their query
	// in a POST body and only read (SendGrid's POST /v3/logs). They are
	// declared in the adapter's code, never taken from configuration, and
	// never name an endpoint that sends. A request passes only when it is
	// exactly one of them: method POST, scheme https, the host (and no
	// other Host header), the path as written (no escaping, no trailing
	// slash, no other letter case) and no query string or credentials in
	// the URL. An entry whose method is not POST allows nothing.
	Searches []SearchEndpoint
}

// SearchEndpoint is one search a [ReadOnlyTransport] lets through besides
// GET and HEAD.
type SearchEndpoint struct {
	// Method is "POST"; any other method allows nothing.
	Method string
	// Host is the API's host as in a URL, with its port if it has one:
	// "api.sendgrid.com".
	Host string
	// Path is the endpoint's path: "/v3/logs".
	Path string
}

// RoundTrip implements http.RoundTripper. A refused request's body is
// closed and its error is permanent; it names the method and the host,
// never the path or the query, which can hold a recipient.
func (t ReadOnlyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead && !t.declaredSearch(req) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, Permanent(fmt.Errorf("refused %s %s: sweeper only reads from providers", req.Method, req.URL.Host))
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	// The lookup this request is for learns whether the provider answered
	// it (see exchange.go): its health counts only the provider's failures.
	return exchangesOf(req.Context()).observe(base.RoundTrip(req))
}

// CloseIdleConnections closes the idle connections of Base, so that an
// adapter's Close reaches them through its http.Client.
func (t ReadOnlyTransport) CloseIdleConnections() { CloseIdle(t.Base) }

// CloseIdle closes the idle connections of rt (of http.DefaultTransport
// when nil), if it keeps any: for the transports adapters stack under
// their http.Client, each of which passes the call on.
func CloseIdle(rt http.RoundTripper) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// declaredSearch reports whether req is exactly one of t.Searches.
func (t ReadOnlyTransport) declaredSearch(req *http.Request) bool {
	u := req.URL
	if req.Method != http.MethodPost || u.Scheme != "https" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Opaque != "" {
		return false
	}
	if req.Host != "" && req.Host != u.Host {
		return false
	}
	for _, s := range t.Searches {
		if s.Method == http.MethodPost && s.Host != "" && s.Host == u.Host && s.Path != "" && s.Path == u.EscapedPath() {
			return true
		}
	}
	return false
}
