package mailgun

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mailgun/mailgun-go/v4/events"

	"github.com/sweeper/sweeper/providers"
)

// maxBody bounds what is read of one response: a page of 300 events is
// well under it.
const maxBody = 4 << 20

// apiTransport carries mailgun-go's requests, after the read-only check.
// It lets through only GETs of the domain's events on the region's API
// host — the first page and the paging URLs Mailgun gives — and sends them
// to api_base when one is set. Statuses other than 200 come back as
// classified errors (with Retry-After), never as responses: mailgun-go
// keeps no headers in its errors and quotes the body. A 200 body reaches
// mailgun-go only once it has been read strictly.
type apiTransport struct {
	name    string
	public  *url.URL // the region's API base, https://api.mailgun.net/v3
	apiBase *url.URL // where requests go instead; nil: public
	events  string   // the events path: /v3/{domain}/events
	next    http.RoundTripper
}

// CloseIdleConnections passes the call on to the transport below.
func (t *apiTransport) CloseIdleConnections() { providers.CloseIdle(t.next) }

// RoundTrip implements http.RoundTripper.
func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close() // a GET carries none
	}
	if !t.isEventsPage(req) {
		// The first page is built from the configuration; any other URL
		// came from an answer's paging.
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: a paging URL that is not a page of the domain's events", t.name))
	}
	u := providers.Rebase(*req.URL, t.apiBase)
	out := req.Clone(req.Context())
	out.URL, out.Host, out.Body, out.ContentLength = &u, "", nil, 0
	out.Header.Set("Accept", "application/json")

	// Mailgun's messages ("Domain not found: …", a rejected filter) can
	// quote the request: only the status is kept.
	resp, body, err := providers.HTTPAnswer{Name: t.name, MaxBody: maxBody}.Fetch(req.Context(), t.next, out)
	if err != nil {
		return nil, err
	}
	if err := checkEventsPage(body); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: %w", t.name, err))
	}
	return resp, nil
}

// isEventsPage reports whether req is a GET of the domain's events on the
// region's host: /v3/{domain}/events, or a page of it,
// /v3/{domain}/events/{token}.
func (t *apiTransport) isEventsPage(req *http.Request) bool {
	u := req.URL
	if req.Method != http.MethodGet || u.Scheme != t.public.Scheme || u.Host != t.public.Host || u.User != nil || (req.Host != "" && req.Host != u.Host) {
		return false
	}
	path := u.EscapedPath()
	if path == t.events {
		return true
	}
	token, ok := strings.CutPrefix(path, t.events+"/")
	return ok && token != "" && !strings.Contains(token, "/")
}

// checkEventsPage accepts exactly one JSON object with an "items" array
// of event objects and a "paging" object with a next URL: mailgun-go
// would read {}, null or a misspelt key as an empty page, which ends the
// search as "found nothing" (I3). The body is read with
// providers.DecodeJSON against mailgun-go's own event types: one value,
// valid UTF-8, no key twice in an object and no two keys that differ only
// in letter case (json-iterator, like encoding/json, would keep the last,
// so `"items":[],"items":[…]` or two op_keys could read as another
// answer), and every name the SDK reads matched exactly (its decoding
// would also take "Recipient" or "TIMESTAMP").
func checkEventsPage(body []byte) error {
	var page struct {
		Items  []json.RawMessage `json:"items"` // stays nil for a missing field or null
		Paging *events.Paging    `json:"paging"`
	}
	if err := providers.DecodeJSON(body, &page); err != nil {
		return err
	}
	switch {
	case page.Items == nil:
		return errors.New(`no "items" array`)
	case page.Paging == nil:
		return errors.New(`no "paging" object`)
	case page.Paging.Next == "":
		return errors.New("no next page URL")
	}
	for i, item := range page.Items {
		if len(item) == 0 || item[0] != '{' {
			return fmt.Errorf("items[%d] is not an object", i)
		}
		var name events.EventName
		if err := providers.DecodeJSON(item, &name); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
		var as any = &events.Generic{}
		switch name.GetName() {
		case "accepted":
			as = &events.Accepted{}
		case "delivered":
			as = &events.Delivered{}
		}
		if err := providers.DecodeJSON(item, as); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
	}
	return nil
}
