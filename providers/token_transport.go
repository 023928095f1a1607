package providers

import (
	"fmt"
	"net/http"
)

// TokenTransport is the transport of an adapter's OAuth token requests: it
// lets through exactly a POST to URL (the exchange creates nothing at the
// provider) and refuses anything else as a permanent error before it is
// sent, so that no request of the API ever passes here, and the API's
// client stays behind [ReadOnlyTransport].
type TokenTransport struct {
	URL  string
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t TokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u := *req.URL
	u.RawQuery = ""
	if req.Method != http.MethodPost || req.URL.RawQuery != "" || u.String() != t.URL {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, Permanent(fmt.Errorf("refused %s %s: only the token exchange is posted", req.Method, req.URL.Host))
	}
	return t.Base.RoundTrip(req)
}

// CloseIdleConnections passes the call on to the transport below.
func (t TokenTransport) CloseIdleConnections() { CloseIdle(t.Base) }
