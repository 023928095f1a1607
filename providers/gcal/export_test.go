package gcal

import "net/http"

// HTTPClientForTest is the client a's API requests use, so tests can show
// that it refuses Google Calendar's write endpoints.
func HTTPClientForTest(a *Adapter) *http.Client { return a.client }

// DecodeListForTest is the strict reader of one events.list page.
var DecodeListForTest = decodeList
