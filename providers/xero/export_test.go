package xero

import "net/http"

// HTTPClientForTest is the client a's lookups use, so tests can show that
// it refuses requests that write.
func HTTPClientForTest(a *Adapter) *http.Client { return a.client }
