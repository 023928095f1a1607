package quickbooks

import "net/http"

// HTTPClientForTest is the client a's requests use, so tests can show that
// it refuses writes.
func HTTPClientForTest(a *Adapter) *http.Client { return a.client }

// SetPageSizeForTest sets the MAXRESULTS a asks for.
func SetPageSizeForTest(a *Adapter, n int) { a.pageSize = n }

// DecodeAnswerForTest is the strict reader of one query answer.
var DecodeAnswerForTest = decodeAnswer
