package postmark_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Postmark's dates are Eastern Time

	"github.com/sweeper/sweeper/providers/providertest"
)

// message is one outbound message the fake Postmark server holds.
type message struct {
	ID         string
	To         string // the first recipient; Recipients lists it
	Recipients []string
	Subject    string
	Tag        string
	Stream     string // default "outbound"
	Status     string // default "Sent"
	Received   time.Time
	Metadata   map[string]string // nil: no Metadata field at all
}

// eastern is Postmark's time zone: its API reads and writes dates in
// Eastern Time.
var eastern = func() *time.Location {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	return loc
}()

// resource renders m as Postmark's outbound message search lists it.
func (m message) resource() map[string]any {
	recipients := m.Recipients
	if recipients == nil {
		recipients = []string{m.To}
	}
	stream := m.Stream
	if stream == "" {
		stream = "outbound"
	}
	status := m.Status
	if status == "" {
		status = "Sent"
	}
	r := map[string]any{
		"Tag":           m.Tag,
		"MessageID":     m.ID,
		"MessageStream": stream,
		"To":            []map[string]any{{"Email": m.To, "Name": nil}},
		"Cc":            []any{},
		"Bcc":           []any{},
		"Recipients":    recipients,
		// Postmark writes seven fractional digits and Eastern Time's offset.
		"ReceivedAt":  m.Received.In(eastern).Format("2006-01-02T15:04:05.0000000-07:00"),
		"From":        `"Acme Receipts" <receipts@acme.example>`,
		"Subject":     m.Subject,
		"Attachments": []any{},
		"Status":      status,
		"TrackOpens":  true,
		"TrackLinks":  "None",
		"Sandboxed":   false,
	}
	if m.Metadata != nil {
		r["Metadata"] = m.Metadata
	}
	return r
}

// searchPage renders one page of Postmark's outbound message search.
func searchPage(total int, messages ...message) []byte {
	list := make([]map[string]any, 0, len(messages))
	for _, m := range messages {
		list = append(list, m.resource())
	}
	b, err := json.Marshal(map[string]any{"TotalCount": total, "Messages": list})
	if err != nil {
		panic(err)
	}
	return b
}

// postmarkError is Postmark's error body.
func postmarkError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"ErrorCode":%d,"Message":%q}`, code, msg)
}

// seen is what the fake was asked.
type seen struct {
	Method string
	Path   string
	Query  url.Values
	Token  string
	Accept string
}

// fakePostmark is an httptest server shaped like Postmark's outbound
// message search, GET /messages/outbound with count (≤ 500), offset
// (count + offset ≤ 10,000), recipient, tag, status, fromdate and todate
// (Eastern Time, no offset), messagestream and metadata_<key>, answering
// {"TotalCount":…,"Messages":[…]} newest first, behind the
// X-Postmark-Server-Token header. Postmark does not say how metadata_
// compares values; the fake compares keys and values ignoring letter case,
// so what the adapter returns is what it compared itself. It counts
// requests that are not GETs — sweeper must never send one (I1).
type fakePostmark struct {
	srv      *httptest.Server
	token    string
	messages []message // newest first
	respond  http.HandlerFunc
	providertest.Recorder[seen]
}

func newFake(t *testing.T, messages ...message) *fakePostmark {
	t.Helper()
	f := &fakePostmark{token: serverToken, messages: messages}
	f.srv = f.Serve(t, "Postmark", f.serveHTTP)
	return f
}

func (f *fakePostmark) serveHTTP(w http.ResponseWriter, r *http.Request) {
	f.Note(seen{r.Method, r.URL.Path, r.URL.Query(), r.Header.Get("X-Postmark-Server-Token"), r.Header.Get("Accept")})
	if r.Method != http.MethodGet {
		f.Wrote()
		// What Postmark answers to a send: it would have happened.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"To":"x@example.com","SubmittedAt":"2026-03-10T10:00:00-04:00","MessageID":"sent","ErrorCode":0,"Message":"OK"}`)
		return
	}
	if f.respond != nil {
		f.respond(w, r)
		return
	}
	if r.Header.Get("X-Postmark-Server-Token") != f.token {
		postmarkError(w, http.StatusUnauthorized, 10, "Request does not contain a valid Server token.")
		return
	}
	if r.URL.Path != "/messages/outbound" {
		postmarkError(w, http.StatusNotFound, 0, "Not found.")
		return
	}
	q := r.URL.Query()
	count, errCount := strconv.Atoi(q.Get("count"))
	offset, errOffset := strconv.Atoi(q.Get("offset"))
	if errCount != nil || errOffset != nil || count < 1 || count > 500 || offset < 0 || offset+count > 10000 {
		postmarkError(w, http.StatusUnprocessableEntity, 0, "Invalid count or offset.")
		return
	}
	var from, to time.Time
	for _, d := range []struct {
		key string
		at  *time.Time
	}{{"fromdate", &from}, {"todate", &to}} {
		if v := q.Get(d.key); v != "" {
			t, err := time.ParseInLocation("2006-01-02T15:04:05", v, eastern)
			if err != nil {
				postmarkError(w, http.StatusUnprocessableEntity, 0, "Invalid "+d.key+".")
				return
			}
			*d.at = t
		}
	}
	var metaKey, metaValue string
	for k, v := range q {
		if strings.HasPrefix(k, "metadata_") {
			metaKey, metaValue = strings.TrimPrefix(k, "metadata_"), v[0]
		}
	}
	var matched []message
	for _, m := range f.messages {
		recipients := m.Recipients
		if recipients == nil {
			recipients = []string{m.To}
		}
		switch {
		case q.Has("recipient") && !containsFold(recipients, q.Get("recipient")),
			q.Has("tag") && m.Tag != q.Get("tag"),
			q.Has("messagestream") && m.Stream != q.Get("messagestream") && !(m.Stream == "" && q.Get("messagestream") == "outbound"),
			!from.IsZero() && m.Received.Before(from),
			!to.IsZero() && m.Received.After(to),
			metaKey != "" && !metadataMatches(m.Metadata, metaKey, metaValue):
			continue
		}
		matched = append(matched, m)
	}
	start := min(offset, len(matched))
	end := min(start+count, len(matched))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(searchPage(len(matched), matched[start:end]...)) //nolint:errcheck // the client may be gone
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

func metadataMatches(metadata map[string]string, key, value string) bool {
	for k, v := range metadata {
		if strings.EqualFold(k, key) && strings.EqualFold(v, value) {
			return true
		}
	}
	return false
}
