package hubspot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the hubspot adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("hubspot", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// apiHost is HubSpot's API host: every request is built for it, then
	// sent to api_base when one is set.
	apiHost = "api.hubapi.com"
	// pageSize is the most HubSpot's search returns per page.
	pageSize = 100
	// maxPages bounds the pages read for one op_key: more than
	// maxPages×pageSize records holding one op_key is no answer to act on.
	maxPages = 10
	// maxSearch is the most results HubSpot's search serves of one query
	// (past it, 400).
	maxSearch = 10000
	// maxBody bounds what is read of a response: a page of 100 records
	// with a few properties is well under it.
	maxBody = 4 << 20
)

// Adapter looks operations up among one HubSpot account's CRM records of
// one object type.
type Adapter struct {
	name     string
	token    string
	object   string
	property string
	unique   bool
	payload  []string
	client   *http.Client
}

var _ providers.MatchingLookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the access token that
// access_token_env names from env. Requests are built for api.hubapi.com
// and pass the read-only check, which lets through GETs and the object
// type's search (a POST that only reads) alone, before they are sent to
// api_base. It fails when the token is not set (the error names the
// variable, never the value) or api_base is not a URL.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	token, err := config.BlockSecret(env.Var, "access_token_env", cfg.AccessTokenEnv)
	if err != nil {
		return nil, err
	}
	base, err := providers.ParseAPIBase(cfg.APIBase)
	if err != nil {
		return nil, err
	}
	d := *cfg
	d.PayloadProperties = append([]string(nil), cfg.PayloadProperties...)
	d.ApplyDefaults()
	if d.Property == "" {
		d.Property = DefaultProperty
	}
	return &Adapter{
		name:     name,
		token:    token,
		object:   d.Object,
		property: d.Property,
		unique:   d.UniqueProperty,
		payload:  d.PayloadProperties,
		client: &http.Client{
			Transport: providers.ReadOnlyTransport{
				Base: providers.RebaseTransport{Host: apiHost, Base: base, Next: env.RoundTripper()},
				// The CRM search takes its filter in a POST body and only
				// reads; it is the one request besides GETs this client
				// sends, and only for the block's object type.
				Searches: []providers.SearchEndpoint{{Method: http.MethodPost, Host: apiHost, Path: searchPath(d.Object)}},
			},
			CheckRedirect: providers.RefuseRedirects("api_base"),
		},
	}, nil
}

// searchPath is the CRM search of an object type.
func searchPath(object string) string { return "/crm/v3/objects/" + object + "/search" }

// Close releases the adapter's idle connections.
func (a *Adapter) Close() { a.client.CloseIdleConnections() }

// Matching implements providers.MatchingLookup: every record carries the
// op_key in the block's property, compared exactly.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// Lookup implements providers.Lookup. It returns the records of the block's
// object type whose property holds q.OpKey exactly (see the package doc),
// or an error classified for the pipeline that names neither the token nor
// the recipient.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	records, err := a.lookup(ctx, q)
	if err != nil {
		return nil, providers.Redact(err, a.token, q.Recipient, strings.TrimSpace(q.Recipient))
	}
	return records, nil
}

func (a *Adapter) lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if err := providers.RequireOpKey(a.name, q); err != nil {
		return nil, err
	}
	if a.unique {
		return a.read(ctx, q.OpKey)
	}
	return a.search(ctx, q.OpKey)
}

// properties are the properties asked for: the op_key's, the payload's,
// and a contact's email (its recipient).
func (a *Adapter) properties() []string {
	props := []string{a.property}
	if a.object == ObjectContacts {
		props = append(props, "email")
	}
	for _, p := range a.payload {
		if !contains(props, p) {
			props = append(props, p)
		}
	}
	return props
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// read asks for the record whose unique property holds opKey:
// GET /crm/v3/objects/{object}/{opKey}?idProperty=…. HubSpot's 404 with
// its OBJECT_NOT_FOUND answer is no record; any other 404 is an error.
func (a *Adapter) read(ctx context.Context, opKey string) ([]providers.Record, error) {
	if opKey == "." || opKey == ".." {
		return nil, providers.Permanent(fmt.Errorf("%s: an op_key of %q cannot be read as a path segment", a.name, opKey))
	}
	prefix := "/crm/v3/objects/" + a.object + "/"
	params := url.Values{}
	params.Set("idProperty", a.property)
	params.Set("properties", strings.Join(a.properties(), ","))
	params.Set("archived", "false")
	u := url.URL{Scheme: "https", Host: apiHost, Path: prefix + opKey, RawPath: prefix + url.PathEscape(opKey), RawQuery: params.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	body, found, err := a.send(ctx, req, "the read by "+a.property, true)
	if err != nil || !found {
		return nil, err
	}
	obj, err := decodeObject(body)
	if err != nil {
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer to the read by %s: %w", a.name, a.property, err))
	}
	if v := obj.Properties[a.property]; v == nil || *v != opKey {
		// HubSpot answered for another value than asked: no answer to act on.
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer to the read by %s: record %s does not hold the op_key asked for", a.name, a.property, providers.Word(obj.ID, 32)))
	}
	rec, err := a.record(obj)
	if err != nil {
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer to the read by %s: %w", a.name, a.property, err))
	}
	return []providers.Record{rec}, nil
}

// searchRequest is the CRM search's body.
type searchRequest struct {
	FilterGroups []filterGroup `json:"filterGroups"`
	Properties   []string      `json:"properties"`
	Limit        int           `json:"limit"`
	After        string        `json:"after,omitempty"`
}

type filterGroup struct {
	Filters []filter `json:"filters"`
}

type filter struct {
	PropertyName string `json:"propertyName"`
	Operator     string `json:"operator"`
	Value        string `json:"value"`
}

// search reads every page of the CRM search for records whose property
// equals opKey and keeps those holding it exactly.
func (a *Adapter) search(ctx context.Context, opKey string) ([]providers.Record, error) {
	objs, err := a.searchObjects(ctx, []string{opKey})
	if err != nil {
		return nil, err
	}
	return a.recordsFor(opKey, objs)
}

// searchObjects reads every page of one CRM search for the records whose
// property equals any of keys — one filter group, one EQ filter, per key
// (groups are OR-joined) — following paging.next.after. At most
// maxPages pages per key are read; more is a permanent error.
func (a *Adapter) searchObjects(ctx context.Context, keys []string) ([]object, error) {
	sr := searchRequest{Properties: a.properties(), Limit: pageSize}
	for _, k := range keys {
		sr.FilterGroups = append(sr.FilterGroups, filterGroup{Filters: []filter{{PropertyName: a.property, Operator: "EQ", Value: k}}})
	}
	var all []object
	seen := map[string]bool{}
	pages := maxPages * len(keys)
	for page := 0; ; page++ {
		if page == pages {
			return nil, providers.Permanent(fmt.Errorf("%s: more than %d pages of %s for %d op_keys, too many to settle automatically", a.name, pages, a.object, len(keys)))
		}
		p, err := a.searchPage(ctx, sr)
		if err != nil {
			return nil, err
		}
		if p.Total > maxSearch {
			return nil, providers.Permanent(fmt.Errorf("%s: %d %s match; HubSpot's search serves at most %d, too many to settle automatically", a.name, p.Total, a.object, maxSearch))
		}
		all = append(all, p.Results...)
		if p.Next == "" {
			if len(all) != p.Total {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: total is %d but the pages held %d results", a.name, p.Total, len(all)))
			}
			return all, nil
		}
		if seen[p.Next] || p.Next == sr.After {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: paging.next.after repeats a cursor", a.name))
		}
		seen[p.Next] = true
		sr.After = p.Next
	}
}

// recordsFor makes the records of the operation opKey from the records a
// search found: only those whose property holds opKey exactly (HubSpot's
// EQ is no proof). A record on two pages (the index moved) is one record;
// two different records under one id are no answer.
func (a *Adapter) recordsFor(opKey string, objs []object) ([]providers.Record, error) {
	var records []providers.Record
	for i, obj := range objs {
		if v := obj.Properties[a.property]; v == nil || *v != opKey {
			continue
		}
		rec, err := a.record(obj)
		if err != nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: result %d: %w", a.name, i, err))
		}
		records = append(records, rec)
	}
	records, err := providers.MergeDuplicates(records)
	if err != nil {
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	return records, nil
}

// searchPage asks for one page of the search and reads it strictly.
func (a *Adapter) searchPage(ctx context.Context, sr searchRequest) (*page, error) {
	payload, err := json.Marshal(sr)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build search: %w", a.name, err))
	}
	u := url.URL{Scheme: "https", Host: apiHost, Path: searchPath(a.object)}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(payload))
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	req.Header.Set("Content-Type", "application/json")
	body, _, err := a.send(ctx, req, "the search", false)
	if err != nil {
		return nil, err
	}
	p, err := decodePage(body)
	if err != nil {
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer to the search: %w", a.name, err))
	}
	return p, nil
}

// send sends req with the token and reads the answer. With notFound, a 404
// carrying HubSpot's OBJECT_NOT_FOUND answer returns found false and no
// error.
func (a *Adapter) send(ctx context.Context, req *http.Request, what string, notFound bool) (body []byte, found bool, err error) {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		// The error names the URL, which holds the op_key: only its cause
		// is kept.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		if ctx.Err() != nil {
			return nil, false, providers.Transient(fmt.Errorf("%s: %w", a.name, ctx.Err()))
		}
		if class, _ := providers.Classify(err); class == providers.ClassPermanent {
			return nil, false, fmt.Errorf("%s: %w", a.name, err) // refused: a redirect, a write
		}
		return nil, false, providers.Transient(fmt.Errorf("%s: %s %s: %w", a.name, req.Method, apiHost, err))
	}
	if notFound && resp.StatusCode == http.StatusNotFound {
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		resp.Body.Close()
		if rerr == nil && len(b) <= maxBody && errorCategory(b) == "OBJECT_NOT_FOUND" {
			return nil, false, nil
		}
		return nil, false, providers.Permanent(fmt.Errorf("%s: HTTP 404 to %s without HubSpot's OBJECT_NOT_FOUND answer: check api_base and object", a.name, what))
	}
	body, err = providers.HTTPAnswer{
		Name:    a.name,
		MaxBody: maxBody,
		Detail: func(b []byte) string {
			if c := errorCategory(b); c != "" {
				return " to " + what + " (HubSpot category " + c + ")"
			}
			return " to " + what
		},
	}.Read(ctx, resp)
	if err != nil {
		return nil, false, err
	}
	return body, true, nil
}

// categoryRE is what an error category HubSpot names looks like.
var categoryRE = regexp.MustCompile(`^[A-Z][A-Z_]{0,63}$`)

// errorCategory names HubSpot's error category from an error body, and
// nothing else of it: its message can quote the request.
func errorCategory(body []byte) string {
	var e struct {
		Status   string `json:"status"`
		Category string `json:"category"`
	}
	if providers.DecodeJSON(body, &e) != nil || e.Status != "error" || !categoryRE.MatchString(e.Category) {
		return ""
	}
	return e.Category
}

// record turns a record holding the op_key into a providers.Record.
func (a *Adapter) record(obj object) (providers.Record, error) {
	created, err := time.Parse(time.RFC3339Nano, obj.CreatedAt)
	if err != nil {
		return providers.Record{}, errors.New("createdAt is not an RFC 3339 date")
	}
	state, status := stateOf(*obj.Archived)
	rec := providers.Record{
		ID:        obj.ID,
		CreatedAt: created.UTC(),
		Excerpt:   fmt.Sprintf("hubspot %s %s %s", a.object, obj.ID, status),
		State:     state,
		Status:    status,
	}
	if a.object == ObjectContacts {
		if e := obj.Properties["email"]; e != nil {
			rec.Recipient = *e
		}
	}
	fields := make(map[string]any, len(a.payload))
	for _, p := range a.payload {
		v := obj.Properties[p]
		if v == nil {
			return rec, nil // nothing to compare: never agreement
		}
		fields[p] = *v
	}
	rec.Fields = fields
	if state == providers.StateEffect {
		// An unhashable value leaves the hash empty: never agreement.
		rec.PayloadHash, _ = ledger.PayloadHashOf(fields)
	}
	return rec, nil
}
