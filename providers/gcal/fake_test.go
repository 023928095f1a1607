package gcal_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/gcal"
	"github.com/sweeper/sweeper/providers/providertest"
)

// testKey is the service account's RSA key, made once.
var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

const clientEmail = "sweeper-reader@acme-bookings.iam.gserviceaccount.com"

// keyJSON is a service account JSON key as the Google Cloud console
// downloads it.
func keyJSON() string {
	der, err := x509.MarshalPKCS8PrivateKey(testKey())
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "acme-bookings", "private_key_id": "3f1c0d6e9a",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": clientEmail, "client_id": "104857600000000000001",
		"auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"client_x509_cert_url":        "https://www.googleapis.com/robot/v1/metadata/x509/sweeper-reader",
		"universe_domain":             "googleapis.com",
	})
	return string(b)
}

const calendarID = "c_bookings@group.calendar.google.com"

// ev is one event the fake calendar holds.
type ev struct {
	ID        string
	Status    string // default confirmed
	OpKey     string // "": no extendedProperties
	Summary   string
	Attendee  string
	Created   time.Time
	Bare      bool // a deleted event as listed: id and status only
	StartDate string
}

func (e ev) resource() map[string]any {
	status := e.Status
	if status == "" {
		status = "confirmed"
	}
	if e.Bare {
		return map[string]any{"kind": "calendar#event", "etag": `"3181161784712000"`, "id": e.ID, "status": status}
	}
	r := map[string]any{
		"kind": "calendar#event", "etag": `"3181161784712000"`, "id": e.ID, "status": status,
		"htmlLink":  "https://www.google.com/calendar/event?eid=" + e.ID,
		"created":   e.Created.UTC().Format("2006-01-02T15:04:05.000Z"),
		"updated":   e.Created.UTC().Add(time.Second).Format("2006-01-02T15:04:05.000Z"),
		"summary":   e.Summary,
		"creator":   map[string]any{"email": clientEmail},
		"organizer": map[string]any{"email": calendarID, "displayName": "Bookings", "self": true},
		"start":     map[string]any{"dateTime": "2026-12-10T10:00:00+01:00", "timeZone": "Europe/Paris"},
		"end":       map[string]any{"dateTime": "2026-12-10T10:30:00+01:00", "timeZone": "Europe/Paris"},
		"iCalUID":   e.ID + "@google.com", "sequence": 0, "eventType": "default",
		"reminders": map[string]any{"useDefault": true},
	}
	if e.StartDate != "" {
		r["start"] = map[string]any{"date": e.StartDate}
		r["end"] = map[string]any{"date": e.StartDate}
	}
	if e.Attendee != "" {
		r["attendees"] = []any{map[string]any{"email": e.Attendee, "responseStatus": "needsAction"}}
	}
	if e.OpKey != "" {
		r["extendedProperties"] = map[string]any{"private": map[string]string{"op_key": e.OpKey}}
	}
	return r
}

// listPage renders one page of events.list.
func listPage(next string, events ...ev) []byte {
	items := []any{}
	for _, e := range events {
		items = append(items, e.resource())
	}
	page := map[string]any{
		"kind": "calendar#events", "etag": `"p33k9v"`, "summary": "Bookings", "description": "",
		"updated": "2026-12-04T09:00:00.000Z", "timeZone": "Europe/Paris", "accessRole": "reader",
		"defaultReminders": []any{}, "items": items,
	}
	if next != "" {
		page["nextPageToken"] = next
	} else {
		page["nextSyncToken"] = "CPDAlvWDx70CEPDAlvWDx70CGAU="
	}
	b, _ := json.Marshal(page)
	return b
}

// calendar is a fake Google Calendar API and OAuth token endpoint, shaped
// after Google's documentation: it filters events.list by
// privateExtendedProperty, hides cancelled events unless showDeleted,
// serves pages of perPage events (empty pages first when emptyPages is
// set), and accepts only the access tokens it issued and has not revoked.
type calendar struct {
	t            *testing.T
	mu           sync.Mutex
	events       []ev
	perPage      int
	emptyPage    int // empty pages, each with a nextPageToken, before the first event
	expiresIn    int // the issued tokens' expires_in; default 3600
	tokenFail    int // the token endpoint's status, 0: it issues
	revoked      map[string]bool
	issued       int
	ignoreFilter bool // return every event whatever the filter (the filter is no proof)

	writes     atomic.Int64 // requests but GET and POST /token
	tokenPosts atomic.Int64
	gets       atomic.Int64
}

func newCalendar(t *testing.T, events ...ev) (*calendar, *httptest.Server) {
	c := &calendar{t: t, events: events, perPage: 250, revoked: map[string]bool{}}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

func googleErr(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"errors":[{"domain":"global","reason":%q,"message":"x"}],"code":%d,"message":"x"}}`, reason, status)
}

func (c *calendar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/token" {
		c.token(w, r)
		return
	}
	if r.Method != http.MethodGet {
		c.writes.Add(1)
		googleErr(w, http.StatusMethodNotAllowed, "methodNotAllowed")
		return
	}
	c.gets.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if n, err := strconv.Atoi(strings.TrimPrefix(token, "ya29.fake-")); !ok || err != nil || n < 1 || n > c.issued || c.revoked[token] {
		googleErr(w, http.StatusUnauthorized, "authError")
		return
	}
	prefix := "/calendar/v3/calendars/" + calendarID
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	switch {
	case r.URL.Path == prefix:
		fmt.Fprintf(w, `{"kind":"calendar#calendar","etag":"\"x\"","id":%q,"summary":"Bookings","timeZone":"Europe/Paris"}`, calendarID)
	case r.URL.Path == prefix+"/events":
		c.list(w, r)
	case strings.HasPrefix(r.URL.Path, prefix+"/events/"):
		id := strings.TrimPrefix(r.URL.Path, prefix+"/events/")
		for _, e := range c.events {
			if e.ID == id {
				json.NewEncoder(w).Encode(e.resource()) //nolint:errcheck // the test reads what arrives
				return
			}
		}
		googleErr(w, http.StatusNotFound, "notFound")
	default:
		googleErr(w, http.StatusNotFound, "notFound")
	}
}

func (c *calendar) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key, value, _ := strings.Cut(q.Get("privateExtendedProperty"), "=")
	var match []ev
	for _, e := range c.events {
		if e.Status == "cancelled" && q.Get("showDeleted") != "true" {
			continue
		}
		if c.ignoreFilter || (key == "op_key" && e.OpKey == value) || (e.Bare && e.OpKey == value) {
			match = append(match, e)
		}
	}
	// Tokens are "e<n>" for the empty pages and "o<offset>" after them.
	offset, empty := 0, 0
	if tok := q.Get("pageToken"); tok != "" {
		if n, ok := strings.CutPrefix(tok, "e"); ok {
			empty, _ = strconv.Atoi(n)
		} else {
			offset, _ = strconv.Atoi(strings.TrimPrefix(tok, "o"))
			empty = c.emptyPage
		}
	}
	if empty < c.emptyPage {
		w.Write(listPage("e" + strconv.Itoa(empty+1))) //nolint:errcheck // the test reads what arrives
		return
	}
	end := min(offset+c.perPage, len(match))
	next := ""
	if end < len(match) {
		next = "o" + strconv.Itoa(end)
	}
	w.Write(listPage(next, match[offset:end]...)) //nolint:errcheck // the test reads what arrives
}

// token checks the JWT bearer grant — grant type, an assertion signed by
// the service account's key for this audience and scope — and issues a
// new access token.
func (c *calendar) token(w http.ResponseWriter, r *http.Request) {
	c.tokenPosts.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if c.tokenFail != 0 {
		w.WriteHeader(c.tokenFail)
		fmt.Fprint(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"unsupported_grant_type"}`)
		return
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(r.PostForm.Get("assertion"), claims, func(*jwt.Token) (any, error) { return &testKey().PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience("http://"+r.Host+"/token"), jwt.WithIssuer(clientEmail))
	if err != nil || claims["scope"] != "https://www.googleapis.com/auth/calendar.readonly" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant","error_description":"Invalid JWT."}`)
		return
	}
	c.issued++
	expires := c.expiresIn
	if expires == 0 {
		expires = 3599
	}
	fmt.Fprintf(w, `{"access_token":"ya29.fake-%d","expires_in":%d,"token_type":"Bearer"}`, c.issued, expires)
}

// revokeAll makes every token issued so far refused.
func (c *calendar) revokeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 1; i <= c.issued; i++ {
		c.revoked["ya29.fake-"+strconv.Itoa(i)] = true
	}
}

// adapter returns an adapter for the fake at srv.
func adapter(t *testing.T, srv *httptest.Server, set ...func(*gcal.Config)) *gcal.Adapter {
	t.Helper()
	cfg := &gcal.Config{CalendarID: calendarID, CredentialsEnv: "GCAL_KEY", APIBase: srv.URL, TokenURL: srv.URL + "/token", PropertyKey: "op_key"}
	for _, s := range set {
		s(cfg)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	a, err := gcal.New("bookings", cfg, providertest.Env(nil, "GCAL_KEY", keyJSON()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func query(opKey string) providers.Query {
	q := providertest.Query()
	q.OpKey = opKey
	return q
}
