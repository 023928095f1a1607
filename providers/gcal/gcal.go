package gcal

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the google_calendar adapter's kind, for the list in
// providers/kinds.
var Kind = providers.NewKind("google_calendar", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// pageSize is the maxResults asked for (Google's default is 250, its
	// most 2500).
	pageSize = 250
	// maxPages bounds how many pages of one search are followed: an answer
	// still saying "more" past it is malformed.
	maxPages = 20
	// maxBody bounds what is read of a response.
	maxBody = 8 << 20
)

// EventID is the event id a workflow sets from an op_key when
// event_id_from_op_key is on: the lowercase base32hex encoding, without
// padding, of the op_key's SHA-256 — 52 characters of 0-9 and a-v, as
// Google requires of an id a client chooses (5-1024 of those).
func EventID(opKey string) string {
	sum := sha256.Sum256([]byte(opKey))
	return strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))
}

// Adapter looks operations up in one Google calendar's events.
type Adapter struct {
	name        string
	calendar    string
	base        *url.URL
	propertyKey string
	byID        bool
	tokens      *tokens
	client      *http.Client
}

var _ providers.MatchingLookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the service account
// JSON key that credentials_env names from env. API requests go through
// env.ReadOnly: only GETs leave; the token exchange, a POST, goes through
// a transport of its own that lets nothing else through. It fails when the
// key is not set or is no service account key (the error names the
// variable, never the value).
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	raw, err := config.BlockSecret(env.Var, "credentials_env", cfg.CredentialsEnv)
	if err != nil {
		return nil, err
	}
	key, pk, err := parseKey(raw)
	if err != nil {
		return nil, fmt.Errorf("credentials_env: %s: %w", cfg.CredentialsEnv, err)
	}
	base, err := providers.ParseAPIBase(cmp.Or(cfg.APIBase, DefaultAPIBase))
	if err != nil {
		return nil, err
	}
	if err := checkCalendarID(cfg.CalendarID); err != nil {
		return nil, err
	}
	tokenURL := cmp.Or(cfg.TokenURL, DefaultTokenURL)
	if err := checkTokenURL(tokenURL); err != nil {
		return nil, err
	}
	return &Adapter{
		name:        name,
		calendar:    cfg.CalendarID,
		base:        base,
		propertyKey: cmp.Or(cfg.PropertyKey, DefaultPropertyKey),
		byID:        cfg.EventIDFromOpKey,
		tokens: &tokens{
			name: name, key: key, pk: pk, url: tokenURL, now: time.Now,
			client: &http.Client{
				Transport:     providers.TokenTransport{URL: tokenURL, Base: env.RoundTripper()},
				CheckRedirect: providers.RefuseRedirects("token_url"),
			},
		},
		client: &http.Client{
			Transport:     env.ReadOnly(),
			CheckRedirect: providers.RefuseRedirects("api_base"),
		},
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() {
	a.client.CloseIdleConnections()
	a.tokens.client.CloseIdleConnections()
}

// Matching implements providers.MatchingLookup: every record carries the
// op_key (its private extended property, or its id derived from it).
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// eventList is one page of events.list; its top-level keys are all
// Google's documented ones, and any other is a malformed answer.
type eventList struct {
	Kind          string            `json:"kind"`
	NextPageToken *string           `json:"nextPageToken"`
	NextSyncToken *string           `json:"nextSyncToken"`
	Items         []json.RawMessage `json:"items"`
}

var listKeys = map[string]bool{
	"kind": true, "etag": true, "summary": true, "description": true, "updated": true, "timeZone": true,
	"accessRole": true, "defaultReminders": true, "nextPageToken": true, "nextSyncToken": true, "items": true,
}

// event is what the adapter reads of an event.
type event struct {
	Kind               string      `json:"kind"`
	ID                 string      `json:"id"`
	Status             string      `json:"status"`
	Created            string      `json:"created"`
	Updated            string      `json:"updated"`
	Summary            *string     `json:"summary"`
	Start              *eventTime  `json:"start"`
	End                *eventTime  `json:"end"`
	Attendees          []attendee  `json:"attendees"`
	ExtendedProperties *extendedPr `json:"extendedProperties"`
}

type eventTime struct {
	Date     string `json:"date"`
	DateTime string `json:"dateTime"`
	TimeZone string `json:"timeZone"`
}

type attendee struct {
	Email string `json:"email"`
}

type extendedPr struct {
	Private map[string]string `json:"private"`
	Shared  map[string]string `json:"shared"`
}

// Lookup implements providers.Lookup. It returns the calendar's events
// carrying q.OpKey (see the package doc), or an error classified for the
// pipeline that names neither the credentials nor the recipient.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	records, err := a.lookup(ctx, q)
	if err != nil {
		a.tokens.mu.Lock()
		token := a.tokens.token
		a.tokens.mu.Unlock()
		return nil, providers.Redact(err, token, q.Recipient, strings.TrimSpace(q.Recipient))
	}
	return records, nil
}

func (a *Adapter) lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if err := providers.RequireOpKey(a.name, q); err != nil {
		return nil, err
	}
	if _, err := providers.Window(a.name, q); err != nil {
		return nil, err
	}
	var records []providers.Record
	if a.byID {
		id := EventID(q.OpKey)
		body, err := a.get(ctx, eventsPath(a.calendar)+"/"+id, nil, true)
		if err != nil {
			return nil, err
		}
		if body != nil {
			var e event
			if err := providers.DecodeJSON(body, &e); err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: event: %w", a.name, err))
			}
			if e.Kind != "calendar#event" || e.ID != id {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: not the event asked for", a.name))
			}
			// The id is the op_key's: the event is the operation's, even
			// without the property — but one naming another op_key
			// contradicts it, and is no answer.
			if e.ExtendedProperties != nil {
				if v, ok := e.ExtendedProperties.Private[a.propertyKey]; ok && v != q.OpKey {
					return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: the event under the op_key's id carries another op_key", a.name))
				}
			}
			rec, err := a.record(e, q, true)
			if err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: event: %w", a.name, err))
			}
			records = append(records, rec)
		}
	}
	listed, err := a.search(ctx, q)
	if err != nil {
		return nil, err
	}
	records = append(records, listed...)
	// An event on two pages, or read by id and listed, is one record; two
	// different events under one id are no answer.
	records, err = providers.MergeDuplicates(records)
	if err != nil {
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	return records, nil
}

// search lists the events whose private extended property holds the
// op_key, deleted ones included, following nextPageToken.
func (a *Adapter) search(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	params := url.Values{}
	params.Set("privateExtendedProperty", a.propertyKey+"="+q.OpKey)
	params.Set("showDeleted", "true")
	params.Set("maxResults", fmt.Sprint(pageSize))
	path := eventsPath(a.calendar)
	var records []providers.Record
	seen := map[string]bool{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: still more pages after %d", a.name, maxPages))
		}
		body, err := a.get(ctx, path, params, false)
		if err != nil {
			return nil, err
		}
		list, err := decodeList(body)
		if err != nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d: %w", a.name, page, err))
		}
		for i, item := range list.Items {
			var e event
			if err := providers.DecodeJSON(item, &e); err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d, event %d: %w", a.name, page, i, err))
			}
			if !a.carries(e, q.OpKey) {
				continue // not the operation's: Google's filter is no proof
			}
			rec, err := a.record(e, q, false)
			if err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d, event %d: %w", a.name, page, i, err))
			}
			records = append(records, rec)
		}
		if list.NextPageToken == nil {
			return records, nil
		}
		token := *list.NextPageToken
		if seen[token] {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d repeats a nextPageToken", a.name, page))
		}
		seen[token] = true
		params.Set("pageToken", token)
		if err := ctx.Err(); err != nil {
			return nil, providers.Transient(fmt.Errorf("%s: %w", a.name, err))
		}
	}
}

// decodeList reads one page of events.list strictly: documented top-level
// keys only, kind calendar#events, an items array, and a nextPageToken
// that is not empty and not beside a nextSyncToken (Google gives one or
// the other).
func decodeList(body []byte) (*eventList, error) {
	var top map[string]json.RawMessage
	if err := providers.DecodeJSON(body, &top); err != nil {
		return nil, err
	}
	// In sorted order, so that one answer gives one error.
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !listKeys[k] {
			return nil, fmt.Errorf("an unknown key %q", providers.Word(k, 40))
		}
	}
	var list eventList
	if err := providers.DecodeJSON(body, &list); err != nil {
		return nil, err
	}
	switch {
	case list.Kind != "calendar#events":
		return nil, errors.New(`kind is not "calendar#events"`)
	case list.Items == nil:
		return nil, errors.New("no items array")
	case list.NextPageToken != nil && *list.NextPageToken == "":
		return nil, errors.New("an empty nextPageToken")
	case list.NextPageToken != nil && list.NextSyncToken != nil:
		return nil, errors.New("both nextPageToken and nextSyncToken")
	}
	return &list, nil
}

// carries reports whether e is the operation's by its private extended
// property. A deleted event may be listed without its properties (Google
// guarantees only its id): it was listed under the op_key's filter, and
// is kept — reversed, it never proves.
func (a *Adapter) carries(e event, opKey string) bool {
	if e.Status == "cancelled" && e.ExtendedProperties == nil {
		return true
	}
	if e.ExtendedProperties == nil {
		return false
	}
	v, ok := e.ExtendedProperties.Private[a.propertyKey]
	return ok && v == opKey
}

// record turns an event of the operation into a record. The summary, free
// text, is kept only as the payload hash (never stored or shown).
func (a *Adapter) record(e event, q providers.Query, byID bool) (providers.Record, error) {
	if e.Kind != "" && e.Kind != "calendar#event" {
		return providers.Record{}, errors.New(`kind is not "calendar#event"`)
	}
	if err := ledger.CheckRecordID(e.ID); err != nil {
		return providers.Record{}, fmt.Errorf("id: %w", err)
	}
	state, known := eventStates[e.Status]
	if !known {
		return providers.Record{}, fmt.Errorf("the status %q is none of Google Calendar's", providers.Word(e.Status, 40))
	}
	rec := providers.Record{
		ID:      e.ID,
		State:   state,
		Status:  e.Status,
		Excerpt: fmt.Sprintf("google_calendar event status=%s", e.Status),
	}
	if byID {
		rec.Excerpt += " by=id"
	}
	if e.Created != "" {
		created, err := time.Parse(time.RFC3339Nano, e.Created)
		if err != nil {
			return providers.Record{}, errors.New("created is not a date with an offset")
		}
		rec.CreatedAt = created.UTC()
	} else if state != providers.StateReversed {
		return providers.Record{}, errors.New("no created")
	}
	for _, at := range e.Attendees {
		if ledger.SameRecipient(at.Email, q.Recipient) {
			rec.Recipient = at.Email
			break
		}
	}
	if rec.Recipient == "" && len(e.Attendees) > 0 {
		rec.Recipient = e.Attendees[0].Email
	}
	if state == providers.StateEffect && e.Summary != nil && e.Start != nil {
		// An unhashable payload leaves the hash empty: never agreement.
		rec.PayloadHash, _ = ledger.PayloadHashOf(payload(e))
	}
	return rec, nil
}

// payload is what the workflow hashes as the operation's payload_hash:
// the summary as sent and the start as Google returns it.
func payload(e event) map[string]string {
	return map[string]string{"summary": *e.Summary, "start": cmp.Or(e.Start.DateTime, e.Start.Date)}
}

// get sends one GET with the access token, refreshing the token once when
// the API answers 401. With notFoundOK, a 404 or 410 is "no such event"
// (nil body, nil error).
func (a *Adapter) get(ctx context.Context, path string, params url.Values, notFoundOK bool) ([]byte, error) {
	u := *a.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = "" // Go escapes the calendar id's '#', '?' and the like
	u.RawQuery = params.Encode()
	for attempt := 0; ; attempt++ {
		token, err := a.tokens.get(ctx)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		answer := providers.HTTPAnswer{Name: a.name, MaxBody: maxBody, Detail: googleError, Status: func(status int) error {
			if status == http.StatusUnauthorized {
				return errUnauthorized
			}
			if notFoundOK && (status == http.StatusNotFound || status == http.StatusGone) {
				return errNoEvent
			}
			return nil
		}}
		resp, err := a.client.Do(req)
		if err != nil {
			var urlErr *url.Error
			if errors.As(err, &urlErr) {
				err = urlErr.Err // the URL holds the op_key
			}
			if ctx.Err() != nil {
				return nil, providers.Transient(fmt.Errorf("%s: %w", a.name, ctx.Err()))
			}
			if class, _ := providers.Classify(err); class == providers.ClassPermanent {
				return nil, fmt.Errorf("%s: %w", a.name, err)
			}
			return nil, providers.Transient(fmt.Errorf("%s: GET %s: %w", a.name, a.base.Host, err))
		}
		if resp.StatusCode == http.StatusForbidden {
			if err := rateLimited403(a.name, resp); err != nil {
				return nil, err
			}
		}
		body, err := answer.Read(ctx, resp)
		switch {
		case errors.Is(err, errNoEvent):
			return nil, nil
		case errors.Is(err, errUnauthorized) && attempt == 0:
			a.tokens.drop(token) // revoked or expired early: one new token
			continue
		case errors.Is(err, errUnauthorized):
			return nil, providers.Permanent(fmt.Errorf("%s: HTTP 401 with a new access token: the service account cannot read calendar_id", a.name))
		}
		return body, err
	}
}

// eventsPath is the calendar's events collection, unescaped.
func eventsPath(calendar string) string { return "/calendar/v3/calendars/" + calendar + "/events" }

var (
	errUnauthorized = errors.New("HTTP 401")
	errNoEvent      = errors.New("no such event")
)

// rateLimitReasons are the reasons with which Google Calendar answers 403
// for a rate or usage limit (its "Handle API errors" guide), to be retried
// later, unlike any other 403.
var rateLimitReasons = map[string]bool{"userRateLimitExceeded": true, "rateLimitExceeded": true, "quotaExceeded": true}

// rateLimited403 reads a 403's body and returns a rate-limited error for a
// usage limit — for Retry-After's delay, or a minute, the window of
// Google's quotas — else puts the body back for [providers.HTTPAnswer].
func rateLimited403(name string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if reason := strings.Trim(googleError(body), " ()"); rateLimitReasons[reason] {
		wait, ok := providers.ParseRetryAfter(resp.Header.Get("Retry-After"))
		if !ok || wait <= 0 {
			wait = time.Minute
		}
		return providers.RateLimited(wait, fmt.Errorf("%s: HTTP 403 (%s)", name, reason))
	}
	return nil
}

// googleError names the reason of a Google API error body
// ({"error":{"errors":[{"reason":"notFound"}],"code":404,...}}), and
// nothing else of it: its message can quote the request.
func googleError(body []byte) string {
	var e struct {
		Error *struct {
			Status string `json:"status"`
			Errors []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if providers.DecodeJSON(body, &e) != nil || e.Error == nil || len(e.Error.Errors) == 0 || providers.Word(e.Error.Errors[0].Reason, 40) == "-" {
		return ""
	}
	return " (" + e.Error.Errors[0].Reason + ")"
}
