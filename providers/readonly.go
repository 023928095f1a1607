package providers

import (
	"fmt"
	"net/http"
)

// ReadOnlyTransport refuses every request that is not a GET or HEAD before
// it leaves the process. Adapters that speak HTTP wrap their transport with
// it, so that no code path of theirs — a mistaken SDK call included — can
// create or send anything at a provider (I1).
type ReadOnlyTransport struct {
	// Base carries the allowed requests; http.DefaultTransport when nil.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t ReadOnlyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, Permanent(fmt.Errorf("refused %s %s: sweeper only reads from providers", req.Method, req.URL.Host))
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(req)
}
