package postmark

import "net/http"

// HTTPClientForTest is the client a's lookups use, so tests can show that
// it refuses Postmark's send endpoints.
func HTTPClientForTest(a *Adapter) *http.Client { return a.client }
