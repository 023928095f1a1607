package twilio_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers/providertest"
)

// message is one Message resource the fake account holds.
type message struct {
	SID, To, From, Body string
	NoBody              bool   // a media-only message: body is null
	Status              string // default "delivered"
	Direction           string // default "outbound-api"
	ErrorCode           int    // Twilio's error_code; 0: null
	Created, Sent       time.Time
}

// twilioDate is Twilio's RFC 2822 timestamp format.
func twilioDate(t time.Time) string { return t.UTC().Format(time.RFC1123Z) }

// resource renders m the way Twilio's API does, every field included.
func (m message) resource(accountSID string) map[string]any {
	uri := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages/%s", accountSID, m.SID)
	var body any = m.Body
	if m.NoBody {
		body = nil
	}
	status := m.Status
	if status == "" {
		status = "delivered"
	}
	direction := m.Direction
	if direction == "" {
		direction = "outbound-api"
	}
	var errorCode, errorMessage any
	if m.ErrorCode != 0 {
		errorCode, errorMessage = m.ErrorCode, "Unreachable destination handset"
	}
	return map[string]any{
		"account_sid":           accountSID,
		"api_version":           "2010-04-01",
		"body":                  body,
		"date_created":          twilioDate(m.Created),
		"date_sent":             twilioDate(m.Sent),
		"date_updated":          twilioDate(m.Sent.Add(2 * time.Second)),
		"direction":             direction,
		"error_code":            errorCode,
		"error_message":         errorMessage,
		"from":                  m.From,
		"messaging_service_sid": nil,
		"num_media":             "0",
		"num_segments":          "1",
		"price":                 "-0.00790",
		"price_unit":            "USD",
		"sid":                   m.SID,
		"status":                status,
		"subresource_uris": map[string]any{
			"media":    uri + "/Media.json",
			"feedback": uri + "/Feedback.json",
		},
		"to":  m.To,
		"uri": uri + ".json",
	}
}

// listPage renders one page of Twilio's message list.
func listPage(accountSID string, messages []message, page, size int, next *string) []byte {
	list := make([]map[string]any, 0, len(messages))
	for _, m := range messages {
		list = append(list, m.resource(accountSID))
	}
	path := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages.json", accountSID)
	b, err := json.Marshal(map[string]any{
		"end":               page*size + max(len(messages)-1, 0),
		"first_page_uri":    fmt.Sprintf("%s?PageSize=%d&Page=0", path, size),
		"messages":          list,
		"next_page_uri":     next,
		"page":              page,
		"page_size":         size,
		"previous_page_uri": nil,
		"start":             page * size,
		"uri":               fmt.Sprintf("%s?PageSize=%d&Page=%d", path, size, page),
	})
	if err != nil {
		panic(err)
	}
	return b
}

// seenRequest is what the fake was asked.
type seenRequest struct {
	Method   string
	Path     string
	Query    url.Values
	User     string
	Password string
	Accept   string
}

// fakeTwilio is an httptest server shaped like Twilio's Messages list
// (GET /2010-04-01/Accounts/{Sid}/Messages.json with To, From, DateSent>,
// DateSent<, PageSize, Page and PageToken), with basic auth. It counts
// requests that are not GETs — sweeper must never send one (I1) — and
// fails the test at cleanup if there were any.
type fakeTwilio struct {
	srv      *httptest.Server
	messages []message // newest first, as Twilio lists them
	pageCap  int       // serve at most this many per page; 0: as asked
	respond  http.HandlerFunc
	providertest.Recorder[seenRequest]
}

func newFake(t *testing.T, messages ...message) *fakeTwilio {
	t.Helper()
	f := &fakeTwilio{messages: messages}
	f.srv = f.Serve(t, "Twilio", f.serveHTTP)
	return f
}

func twilioError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"code":%d,"message":%q,"more_info":"https://www.twilio.com/docs/errors/%d","status":%d}`, code, msg, code, status)
}

func (f *fakeTwilio) serveHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, _ := r.BasicAuth()
	f.Note(seenRequest{r.Method, r.URL.Path, r.URL.Query(), user, pass, r.Header.Get("Accept")})
	if r.Method != http.MethodGet {
		f.Wrote()
		// What Twilio answers to a send: it would have happened.
		w.WriteHeader(http.StatusCreated)
		return
	}
	if f.respond != nil {
		f.respond(w, r)
		return
	}
	if user != accountSID || pass != authToken {
		twilioError(w, http.StatusUnauthorized, 20003, "Authenticate")
		return
	}
	path := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages.json", accountSID)
	if r.URL.Path != path {
		twilioError(w, http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		return
	}
	q := r.URL.Query()
	var after, before time.Time
	var err error
	if v := q.Get("DateSent>"); v != "" {
		if after, err = time.Parse(time.RFC3339, v); err != nil {
			twilioError(w, http.StatusBadRequest, 20001, "Invalid DateSent>")
			return
		}
	}
	if v := q.Get("DateSent<"); v != "" {
		if before, err = time.Parse(time.RFC3339, v); err != nil {
			twilioError(w, http.StatusBadRequest, 20001, "Invalid DateSent<")
			return
		}
	}
	var matched []message
	for _, m := range f.messages {
		switch {
		case q.Has("To") && m.To != q.Get("To"),
			q.Has("From") && m.From != q.Get("From"),
			!after.IsZero() && m.Sent.Before(after),
			!before.IsZero() && m.Sent.After(before):
			continue
		}
		matched = append(matched, m)
	}
	size := 50
	if v, err := strconv.Atoi(q.Get("PageSize")); err == nil {
		size = v
	}
	if f.pageCap > 0 {
		size = min(size, f.pageCap)
	}
	page, _ := strconv.Atoi(q.Get("Page"))
	start := min(page*size, len(matched))
	end := min(start+size, len(matched))
	var next *string
	if end < len(matched) {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("PageSize", strconv.Itoa(size))
		nq.Set("Page", strconv.Itoa(page+1))
		nq.Set("PageToken", "PA"+matched[end-1].SID)
		s := path + "?" + nq.Encode()
		next = &s
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(listPage(accountSID, matched[start:end], page, size, next)) //nolint:errcheck // the client may be gone
}
