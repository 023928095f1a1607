package sendgrid

import "net/http"

// HTTPClientForTest is the client a's lookups use, so tests can show that
// it refuses SendGrid's send endpoints.
func HTTPClientForTest(a *Adapter) *http.Client { return a.client }
