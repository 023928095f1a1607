package gcal_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/gcal"
)

// TestRecordNamespace: the namespace is the calendar as Google names it,
// read with one GET of the calendar; a calendar the key cannot read, or
// an answer without its id, is an error, never a namespace.
func TestRecordNamespace(t *testing.T) {
	t.Parallel()
	_, srv := newCalendar(t)
	a := adapter(t, srv)
	var _ providers.RecordNamespacer = a
	if got, err := a.RecordNamespace(context.Background()); err != nil || got != "google_calendar:"+calendarID {
		t.Errorf("RecordNamespace = %q, %v", got, err)
	}
	for _, tc := range []struct {
		desc   string
		status int
		body   string
	}{
		{"not shared with the account", 404, `{"error":{"errors":[{"domain":"global","reason":"notFound","message":"Not Found"}],"code":404,"message":"Not Found"}}`},
		{"forbidden", 403, `{"error":{"errors":[{"domain":"global","reason":"forbidden","message":"x"}],"code":403,"message":"x"}}`},
		{"no id", 200, `{"kind":"calendar#calendar","summary":"Bookings"}`},
		{"id twice", 200, `{"kind":"calendar#calendar","id":"a","id":"b"}`},
	} {
		srv := tokenAndAPI(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body)) //nolint:errcheck // the test reads what arrives
		})
		if got, err := adapter(t, srv).RecordNamespace(context.Background()); err == nil {
			t.Errorf("%s: RecordNamespace = %q, nil; want an error", tc.desc, got)
		}
	}
	hint := (&gcal.Config{CalendarID: calendarID}).AccountHint(nil)
	if hint != "google_calendar:"+calendarID || (&gcal.Config{CalendarID: "primary"}).AccountHint(nil) != "" {
		t.Errorf("AccountHint = %q", hint)
	}
}
