package postmark

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the postmark adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("postmark", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// searchPath is the outbound message search.
	searchPath = "/messages/outbound"
	// pageSize is the most Postmark returns per page.
	pageSize = 500
	// maxSearch is the most messages Postmark serves of one search:
	// offset + count may not exceed it.
	maxSearch = 10000
	// maxBody bounds what is read of a response: a page of 500 messages is
	// well under it.
	maxBody = 4 << 20
	// dateLayout is how Postmark takes fromdate and todate: Eastern Time,
	// no offset.
	dateLayout = "2006-01-02T15:04:05"
)

// est is Eastern Standard Time, in which fromdate and todate are written.
var est = time.FixedZone("EST", -5*60*60)

// Adapter looks operations up in one Postmark server's outbound messages.
type Adapter struct {
	name        string
	token       string
	base        *url.URL
	metadataKey string
	stream      string
	client      *http.Client
}

var _ providers.MatchingLookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the server token
// that server_token_env names from env. Requests go through env.ReadOnly:
// only GETs leave. It fails when the token is not set (the error names the
// variable, never the value) or api_base is not a URL.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	token, err := config.BlockSecret(env.Var, "server_token_env", cfg.ServerTokenEnv)
	if err != nil {
		return nil, err
	}
	base, err := providers.ParseAPIBase(cmp.Or(cfg.APIBase, DefaultAPIBase))
	if err != nil {
		return nil, err
	}
	return &Adapter{
		name:        name,
		token:       token,
		base:        base,
		metadataKey: cmp.Or(cfg.MetadataKey, DefaultMetadataKey),
		stream:      cfg.MessageStream,
		client: &http.Client{
			Transport:     env.ReadOnly(),
			CheckRedirect: providers.RefuseRedirects("api_base"),
		},
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() { a.client.CloseIdleConnections() }

// Matching implements providers.MatchingLookup: every record carries the
// op_key in its Metadata, compared exactly.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// searchResult is one page of the outbound message search.
type searchResult struct {
	TotalCount *int       `json:"TotalCount"`
	Messages   []outbound `json:"Messages"` // stays nil for a missing field or null
}

// outbound is what the adapter reads of a listed message.
type outbound struct {
	MessageID     string            `json:"MessageID"`
	MessageStream string            `json:"MessageStream"`
	Recipients    []string          `json:"Recipients"`
	ReceivedAt    string            `json:"ReceivedAt"`
	Subject       *string           `json:"Subject"`
	Status        string            `json:"Status"`
	Metadata      map[string]string `json:"Metadata"`
}

// Lookup implements providers.Lookup. It returns the messages whose
// Metadata holds q.OpKey under metadata_key (see the package doc), or an
// error classified for the pipeline that names neither the token nor the
// recipient.
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
	now, err := providers.Window(a.name, q)
	if err != nil {
		return nil, err
	}

	params := url.Values{}
	params.Set("count", strconv.Itoa(pageSize))
	if r := strings.TrimSpace(q.Recipient); r != "" {
		params.Set("recipient", r)
	}
	params.Set("fromdate", q.Since.Add(-24*time.Hour).In(est).Format(dateLayout))
	params.Set("todate", now.Add(24*time.Hour).In(est).Format(dateLayout))
	params.Set("metadata_"+a.metadataKey, q.OpKey)
	if a.stream != "" {
		params.Set("messagestream", a.stream)
	}

	var records []providers.Record
	for offset := 0; ; {
		params.Set("offset", strconv.Itoa(offset))
		page, err := a.page(ctx, params)
		if err != nil {
			return nil, err
		}
		total := *page.TotalCount
		switch {
		case total > maxSearch:
			return nil, providers.Permanent(fmt.Errorf("%s: %d messages match; Postmark serves at most %d of one search, too many to settle automatically", a.name, total, maxSearch))
		case len(page.Messages) > pageSize:
			return nil, providers.Transient(fmt.Errorf("%s: malformed answer: a page of %d messages, asked for %d", a.name, len(page.Messages), pageSize))
		}
		for i, m := range page.Messages {
			value, ok := m.Metadata[a.metadataKey]
			if !ok || value != q.OpKey {
				continue // not the operation's: Postmark's filter is no proof
			}
			rec, err := a.record(m, q.Recipient)
			if err != nil {
				return nil, providers.Transient(fmt.Errorf("%s: malformed answer: offset %d, message %d: %w", a.name, offset, i, err))
			}
			records = append(records, rec)
		}
		offset += len(page.Messages)
		if offset >= total {
			break
		}
		if len(page.Messages) < pageSize {
			return nil, providers.Transient(fmt.Errorf("%s: malformed answer: TotalCount is %d but a page ended at %d", a.name, total, offset))
		}
		if err := ctx.Err(); err != nil {
			return nil, providers.Transient(fmt.Errorf("%s: %w", a.name, err))
		}
	}

	// A message on two pages (the list moved between requests) is one
	// record; two different messages under one id are no answer.
	records, err = providers.MergeDuplicates(records)
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	return records, nil
}

// page asks for one page of the search and reads it strictly.
func (a *Adapter) page(ctx context.Context, params url.Values) (*searchResult, error) {
	u := *a.base
	u.Path = strings.TrimRight(u.Path, "/") + searchPath
	u.RawPath = ""
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Postmark-Server-Token", a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		// The error names the URL with the query — the recipient and the
		// op_key — so only its cause is kept.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		if ctx.Err() != nil {
			return nil, providers.Transient(fmt.Errorf("%s: %w", a.name, ctx.Err()))
		}
		if class, _ := providers.Classify(err); class == providers.ClassPermanent {
			return nil, fmt.Errorf("%s: %w", a.name, err) // refused: a redirect, a write
		}
		return nil, providers.Transient(fmt.Errorf("%s: GET %s: %w", a.name, a.base.Host, err))
	}
	body, err := providers.HTTPAnswer{Name: a.name, MaxBody: maxBody, Detail: errorCode}.Read(ctx, resp)
	if err != nil {
		return nil, err
	}
	// DecodeJSON refuses a key twice, keys differing only in letter case and
	// names that match a field only so ("SUBJECT"): encoding/json would
	// take the last of them, and `"Messages":[],"Messages":[…]` or two
	// op_keys could read as another answer.
	var page searchResult
	if err := providers.DecodeJSON(body, &page); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	switch {
	case page.TotalCount == nil:
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: no TotalCount", a.name))
	case *page.TotalCount < 0:
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: a negative TotalCount", a.name))
	case page.Messages == nil:
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: no Messages array", a.name))
	}
	return &page, nil
}

// record turns a message carrying the op_key into a record.
func (a *Adapter) record(m outbound, recipient string) (providers.Record, error) {
	if err := ledger.CheckRecordID(m.MessageID); err != nil {
		return providers.Record{}, fmt.Errorf("MessageID: %w", err)
	}
	if m.ReceivedAt == "" {
		return providers.Record{}, errors.New("no ReceivedAt")
	}
	received, err := time.Parse(time.RFC3339Nano, m.ReceivedAt)
	if err != nil {
		return providers.Record{}, errors.New("ReceivedAt is not a date with an offset")
	}
	state, known := messageStates[strings.ToLower(m.Status)]
	if !known {
		return providers.Record{}, fmt.Errorf("the Status %q is none of Postmark's", providers.Word(m.Status, 32))
	}
	rec := providers.Record{
		ID:        m.MessageID,
		CreatedAt: received.UTC(),
		Excerpt:   fmt.Sprintf("postmark message status=%s stream=%s", providers.Word(m.Status, 32), providers.Word(m.MessageStream, 32)),
		State:     state,
		Status:    m.Status,
	}
	for _, r := range m.Recipients {
		if ledger.SameRecipient(r, recipient) {
			rec.Recipient = r
			break
		}
	}
	if rec.Recipient == "" && len(m.Recipients) > 0 {
		rec.Recipient = m.Recipients[0]
	}
	if m.Subject == nil {
		return rec, nil // nothing to compare: never agreement
	}
	rec.Fields = map[string]any{"subject": *m.Subject}
	if state != providers.StateFailed {
		// Postmark accepted the message; a failed attempt carries no hash.
		// An unhashable subject leaves the hash empty: never agreement.
		rec.PayloadHash, _ = ledger.PayloadHashOf(rec.Fields)
	}
	return rec, nil
}

// errorCode names Postmark's ErrorCode from an error body, and nothing
// else of it: its Message can quote the request (a recipient).
func errorCode(body []byte) string {
	var e struct {
		ErrorCode *int `json:"ErrorCode"`
	}
	if providers.DecodeJSON(body, &e) != nil || e.ErrorCode == nil {
		return ""
	}
	return fmt.Sprintf(" (Postmark ErrorCode %d)", *e.ErrorCode)
}
