package mailgun_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers/providertest"
)

// event is one event the fake Mailgun domain holds.
type event struct {
	ID        string
	Name      string // "accepted", "delivered", "failed", …
	At        time.Time
	Recipient string
	MessageID string // as in message.headers, without angle brackets
	Subject   string
	Vars      map[string]any // user-variables; nil: {}
	// A failed event's severity ("permanent", "temporary") and reason
	// ("suppress-bounce", "bounce", "generic"); a rejected event's reason.
	Severity, Reason string
}

// mgTimestamp is Mailgun's event timestamp: seconds since the epoch, with
// microseconds.
func mgTimestamp(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond()/1000)/1e6
}

// item renders e as Mailgun's events API lists it.
func (e event) item() map[string]any {
	vars := e.Vars
	if vars == nil {
		vars = map[string]any{}
	}
	domainOf := e.Recipient[strings.LastIndex(e.Recipient, "@")+1:]
	it := map[string]any{
		"event":            e.Name,
		"id":               e.ID,
		"timestamp":        mgTimestamp(e.At),
		"log-level":        "info",
		"method":           "HTTP",
		"recipient":        e.Recipient,
		"recipient-domain": domainOf,
		"envelope": map[string]any{
			"sender": "receipts@" + domain, "targets": e.Recipient, "transport": "smtp",
			"sending-ip": "209.61.154.250",
		},
		"flags": map[string]any{"is-authenticated": true, "is-test-mode": false},
		"message": map[string]any{
			"headers": map[string]any{
				"to": e.Recipient, "message-id": e.MessageID,
				"from": "Acme Receipts <receipts@" + domain + ">", "subject": e.Subject,
			},
			"attachments": []any{},
			"size":        4127,
		},
		"storage":        map[string]any{"url": "https://storage.us-east4.gcp.mailgun.net/v3/domains/" + domain + "/messages/key-" + e.ID, "key": "key-" + e.ID},
		"tags":           []any{},
		"campaigns":      []any{},
		"user-variables": vars,
	}
	switch e.Name {
	case "failed":
		it["severity"], it["reason"], it["log-level"] = e.Severity, e.Reason, "error"
		if e.Severity == "temporary" {
			it["log-level"] = "warn"
		}
		it["delivery-status"] = map[string]any{
			"code": 605, "message": "", "description": "Not delivering to previously bounced address", "attempt-no": 1,
			"session-seconds": 0.0, "mx-host": "", "tls": false, "certificate-verified": false, "utf8": true,
		}
	case "rejected":
		it["reject"] = map[string]any{"reason": e.Reason, "description": "Sandbox subdomains are for test purposes only"}
		it["log-level"] = "warn"
	}
	if e.Name == "delivered" {
		it["delivery-status"] = map[string]any{
			"code": 250, "message": "OK", "description": "", "attempt-no": 1,
			"session-seconds": 0.412, "mx-host": "mx.example.com", "tls": true, "certificate-verified": true, "utf8": true,
		}
	}
	return it
}

// eventsPage renders one page of Mailgun's events API; next is the URL of
// the next page, as Mailgun always gives one.
func eventsPage(next string, events ...event) []byte {
	items := make([]map[string]any, 0, len(events))
	for _, e := range events {
		items = append(items, e.item())
	}
	b, err := json.Marshal(map[string]any{
		"items": items,
		"paging": map[string]any{
			"first":    next + "?first",
			"last":     next + "?last",
			"next":     next,
			"previous": next + "?previous",
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// seen is what the fake was asked.
type seen struct {
	Method   string
	Path     string
	Query    url.Values
	User     string
	Password string
}

// fakeMailgun is an httptest server shaped like Mailgun's events API,
// GET /v3/{domain}/events with begin and end (RFC 2822 or epoch seconds),
// ascending, limit (≤ 300), recipient and event (a filter expression such
// as "accepted OR delivered"), behind basic auth (user "api", the API key
// as password). Each page's paging.next is a URL on the region's public
// API host, /v3/{domain}/events/{token}, as Mailgun writes it; the page
// after the last is empty. It counts requests that are not GETs —
// sweeper must never send one (I1).
type fakeMailgun struct {
	srv     *httptest.Server
	public  string // the region's API base the paging URLs name
	events  []event
	pageCap int // serve at most this many per page; 0: as asked
	respond http.HandlerFunc
	providertest.Recorder[seen]
}

func newFake(t *testing.T, events ...event) *fakeMailgun {
	t.Helper()
	f := &fakeMailgun{public: "https://api.mailgun.net/v3", events: events}
	f.srv = f.Serve(t, "Mailgun", f.serveHTTP)
	return f
}

func mailgunError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q}`, msg)
}

// pageToken is the fake's paging token: the search and where it is.
type pageToken struct {
	Query  string `json:"q"`
	Offset int    `json:"o"`
}

func (f *fakeMailgun) serveHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, _ := r.BasicAuth()
	f.Note(seen{r.Method, r.URL.Path, r.URL.Query(), user, pass})
	if r.Method != http.MethodGet {
		f.Wrote()
		// What Mailgun answers to a send: it would have happened.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"<20260310140000.1.ABCDEF@mg.acme.example>","message":"Queued. Thank you."}`)
		return
	}
	if f.respond != nil {
		f.respond(w, r)
		return
	}
	if user != "api" || pass != apiKey {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, "Forbidden")
		return
	}
	base := "/v3/" + domain + "/events"
	q := r.URL.Query()
	offset := 0
	switch {
	case r.URL.Path == base:
	case strings.HasPrefix(r.URL.Path, base+"/"):
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(r.URL.Path, base+"/"))
		var tok pageToken
		if err != nil || json.Unmarshal(raw, &tok) != nil {
			mailgunError(w, http.StatusBadRequest, "Invalid page token")
			return
		}
		if q, err = url.ParseQuery(tok.Query); err != nil {
			mailgunError(w, http.StatusBadRequest, "Invalid page token")
			return
		}
		offset = tok.Offset
	default:
		mailgunError(w, http.StatusNotFound, "Domain not found: "+strings.Split(strings.TrimPrefix(r.URL.Path, "/v3/"), "/")[0])
		return
	}
	begin, err := parseMailgunTime(q.Get("begin"))
	if err != nil {
		mailgunError(w, http.StatusBadRequest, "Invalid begin")
		return
	}
	end, err := parseMailgunTime(q.Get("end"))
	if err != nil {
		mailgunError(w, http.StatusBadRequest, "Invalid end")
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 300 {
			mailgunError(w, http.StatusBadRequest, "Invalid limit")
			return
		}
	}
	names := map[string]bool{}
	for _, n := range strings.Split(q.Get("event"), " OR ") {
		if n = strings.TrimSpace(n); n != "" {
			names[n] = true
		}
	}
	var matched []event
	for _, e := range f.events {
		switch {
		case len(names) > 0 && !names[e.Name],
			q.Has("recipient") && !strings.EqualFold(e.Recipient, q.Get("recipient")),
			!begin.IsZero() && e.At.Before(begin),
			!end.IsZero() && e.At.After(end):
			continue
		}
		matched = append(matched, e)
	}
	size := limit
	if f.pageCap > 0 {
		size = min(size, f.pageCap)
	}
	start := min(offset, len(matched))
	stop := min(start+size, len(matched))
	tok, _ := json.Marshal(pageToken{Query: q.Encode(), Offset: stop})
	next := f.public + "/" + domain + "/events/" + base64.RawURLEncoding.EncodeToString(tok)
	w.Header().Set("Content-Type", "application/json")
	w.Write(eventsPage(next, matched[start:stop]...)) //nolint:errcheck // the client may be gone
}

// parseMailgunTime reads a begin or end: RFC 2822 or epoch seconds.
func parseMailgunTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		whole := math.Floor(secs)
		return time.Unix(int64(whole), int64((secs-whole)*1e9)), nil
	}
	return time.Parse("Mon, 2 Jan 2006 15:04:05 -0700", s)
}
