package sendgrid

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/sendgrid/rest"
	sg "github.com/sendgrid/sendgrid-go"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the sendgrid adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("sendgrid", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// searchLimit is the most messages one Email Logs search returns; it
	// has no pagination, so an answer this long may be cut short.
	searchLimit = 1000
	// maxCandidates bounds the messages whose details one lookup reads.
	maxCandidates = 20
)

// regionHosts are SendGrid's API hosts by region, as sendgrid-go names
// them.
var regionHosts = map[string]string{RegionGlobal: "api.sendgrid.com", RegionEU: "api.eu.sendgrid.com"}

// Adapter looks operations up in one SendGrid account's Email Logs.
type Adapter struct {
	name      string
	key       string
	region    string
	customArg string
	client    *http.Client
	sdk       *rest.Client
}

var _ providers.MatchingLookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the API key that
// api_key_env names from env. Only Email Logs' search and a message's
// details reach env.Transport (http.DefaultTransport when nil). It fails
// when the key is not set (the error names the variable, never the value),
// the region is unknown or api_base is not a URL.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	key, err := config.BlockSecret(env.Var, "api_key_env", cfg.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	region := cmp.Or(cfg.Region, DefaultRegion)
	host, ok := regionHosts[region]
	if !ok {
		return nil, fmt.Errorf("region: must be %q or %q", RegionGlobal, RegionEU)
	}
	apiBase, err := providers.ParseAPIBase(cfg.APIBase)
	if err != nil {
		return nil, err
	}
	client := &http.Client{
		Transport: providers.ReadOnlyTransport{
			Base: &apiTransport{name: name, host: host, apiBase: apiBase, next: env.RoundTripper()},
			// Email Logs' search is a POST that only reads (SendGrid takes the
			// query in a body so that addresses stay out of URLs); it is the
			// one request besides GETs this client sends, and only to the
			// region's host.
			Searches: []providers.SearchEndpoint{{Method: http.MethodPost, Host: host, Path: searchPath}},
		},
		CheckRedirect: providers.RefuseRedirects("api_base"),
	}
	return &Adapter{
		name:      name,
		key:       key,
		region:    region,
		customArg: cmp.Or(cfg.CustomArg, DefaultCustomArg),
		client:    client,
		sdk:       &rest.Client{HTTPClient: client},
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() { a.client.CloseIdleConnections() }

// Matching implements providers.MatchingLookup: every record carries the
// op_key in its custom_args, compared exactly.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// Lookup implements providers.Lookup. It returns the messages to
// q.Recipient in the window whose custom_args hold q.OpKey (see the
// package doc), or an error classified for the pipeline that names neither
// the key nor the recipient.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	records, err := a.lookup(ctx, q)
	if err != nil {
		return nil, providers.Redact(err, a.key, q.Recipient, strings.TrimSpace(q.Recipient))
	}
	return records, nil
}

func (a *Adapter) lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if err := providers.RequireOpKey(a.name, q); err != nil {
		return nil, err
	}
	to := strings.TrimSpace(q.Recipient)
	switch {
	case to == "":
		return nil, providers.Permanent(fmt.Errorf("%s: the operation has no recipient; Email Logs is searched by to_email", a.name))
	case strings.ContainsAny(to, `"\`) || strings.ContainsFunc(to, unicode.IsControl):
		return nil, providers.Permanent(fmt.Errorf("%s: the recipient cannot be put in a SendGrid query (it holds a quote, a backslash or a control character)", a.name))
	}
	now, err := providers.Window(a.name, q)
	if err != nil {
		return nil, err
	}

	listed, err := a.search(ctx, to, q.Since, now)
	if err != nil {
		return nil, err
	}
	if len(listed) >= searchLimit {
		return nil, providers.Permanent(fmt.Errorf("%s: %d or more messages to the recipient in the window, and Email Logs does not page: too many to settle automatically", a.name, searchLimit))
	}
	var candidates []summary
	for _, s := range listed {
		if ledger.SameRecipient(s.ToEmail, to) {
			candidates = append(candidates, s)
		}
	}
	if len(candidates) > maxCandidates {
		return nil, providers.Permanent(fmt.Errorf("%s: %d messages to the recipient in the window; at most %d are read one by one: too many to settle automatically", a.name, len(candidates), maxCandidates))
	}

	read := map[string]*details{}
	var records []providers.Record
	for i, s := range candidates {
		if err := ledger.CheckRecordID(s.SGMessageID); err != nil {
			return nil, providers.Transient(fmt.Errorf("%s: malformed answer: message %d: sg_message_id: %w", a.name, i, err))
		}
		created, err := time.Parse(time.RFC3339Nano, s.CreatedAt)
		if err != nil {
			return nil, providers.Transient(fmt.Errorf("%s: malformed answer: message %d: sg_message_id_created_at is not a date with an offset", a.name, i))
		}
		d, ok := read[s.SGMessageID]
		if !ok {
			if d, err = a.detail(ctx, s.SGMessageID); err != nil {
				return nil, err
			}
			read[s.SGMessageID] = d
		}
		if v, ok := d.CustomArgs[a.customArg]; !ok || v != q.OpKey {
			continue // not the operation's
		}
		rec, err := record(d, created.UTC())
		if err != nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: message %d: %w", a.name, i, err))
		}
		records = append(records, rec)
	}
	// A message listed twice is one record when both copies agree.
	records, err = providers.MergeDuplicates(records)
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	return records, nil
}

// search lists the messages to the recipient created in [since, until],
// in whole seconds, the end rounded up.
func (a *Adapter) search(ctx context.Context, to string, since, until time.Time) ([]summary, error) {
	query := fmt.Sprintf(`to_email = "%s" AND sg_message_id_created_at >= TIMESTAMP "%s" AND sg_message_id_created_at <= TIMESTAMP "%s"`,
		to, since.UTC().Truncate(time.Second).Format(time.RFC3339), until.UTC().Truncate(time.Second).Add(time.Second).Format(time.RFC3339))
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // the query's >= and <= as written
	if err := enc.Encode(struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}{query, searchLimit}); err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build the search: %w", a.name, err))
	}
	req, err := a.request(searchPath, rest.Post, bytes.TrimRight(body.Bytes(), "\n"))
	if err != nil {
		return nil, err
	}
	resp, err := a.sdk.SendWithContext(ctx, req)
	if err != nil {
		return nil, a.sdkError(ctx, err)
	}
	listed, err := decodeSearch([]byte(resp.Body)) // checked by the transport
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer from the Email Logs search: %w", a.name, err))
	}
	return listed, nil
}

// detail reads one message's details, which hold its custom_args.
func (a *Adapter) detail(ctx context.Context, id string) (*details, error) {
	req, err := a.request(searchPath+"/"+url.PathEscape(id), rest.Get, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.sdk.SendWithContext(ctx, req)
	if err != nil {
		return nil, a.sdkError(ctx, err)
	}
	d, err := decodeDetail([]byte(resp.Body)) // checked by the transport
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer from a message's details: %w", a.name, err))
	}
	if d.SGMessageID != id {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: the details asked for one message and describe another", a.name))
	}
	return d, nil
}

// request is sendgrid-go's request for endpoint on the region's host.
func (a *Adapter) request(endpoint string, method rest.Method, body []byte) (rest.Request, error) {
	req, err := sg.SetDataResidency(sg.GetRequest(a.key, endpoint, ""), a.region)
	if err != nil {
		return rest.Request{}, providers.Permanent(fmt.Errorf("%s: region: %w", a.name, err))
	}
	req.Method, req.Body = method, body
	return req, nil
}

// record turns a message carrying the op_key into a record: its state
// ([messageStates]), the subject, and its hash unless the message failed.
// A status not in the table is an error.
func record(d *details, created time.Time) (providers.Record, error) {
	state, known := messageStates[d.Status]
	if !known {
		return providers.Record{}, fmt.Errorf("status %q is none of SendGrid's", providers.Word(d.Status, 24))
	}
	rec := providers.Record{
		ID:        d.SGMessageID,
		CreatedAt: created,
		Recipient: d.ToEmail,
		Excerpt:   "sendgrid message status=" + providers.Word(d.Status, 24),
		State:     state,
		Status:    d.Status,
	}
	if d.Subject == nil {
		return rec, nil // nothing to compare: never agreement
	}
	rec.Fields = map[string]any{"subject": *d.Subject}
	if state != providers.StateFailed {
		// An unhashable subject leaves the hash empty: never agreement.
		rec.PayloadHash, _ = ledger.PayloadHashOf(rec.Fields)
	}
	return rec, nil
}

// sdkError classifies an error sendgrid-go returned: the transport's own,
// inside the *url.Error net/http wraps it in (whose text names the URL).
func (a *Adapter) sdkError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return providers.Transient(fmt.Errorf("%s: %w", a.name, ctx.Err()))
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var classified *providers.Error
	if errors.As(err, &classified) || errors.Is(err, providers.ErrUnsupported) {
		return err
	}
	return providers.Transient(fmt.Errorf("%s: could not read SendGrid's answer", a.name))
}
