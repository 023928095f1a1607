// Package httplookup is the generic lookup protocol: any service that
// answers one GET with the records it holds for an operation can be a
// provider, an n8n webhook workflow included.
//
//	GET {url}?op_key=…&recipient=…&action=…&since=…&until=…   (RFC 3339 times)
//	Authorization: Bearer <token from token_env>                (when token_env is set)
//	→ 200 {"matches":[{"id":"…","created_at":"…","recipient":"…","payload_hash":"…"}]}
//
// {"matches":[]} means "searched, found none". Keys are exact and each
// appears once per object: a body with a key twice, two keys that differ
// only in letter case, a field under another case ("ID", "Payload_Hash"),
// invalid UTF-8 or data after the object is malformed. Any other status, a
// malformed body or a missing matches field is a failed lookup, never "none":
// 429 waits for Retry-After, 5xx and network errors are retried, 401, 403
// and other 4xx are permanent.
//
// # Batch form
//
// An endpoint that searches by op_key may answer for several operations in
// one request; its block says so with max_batch (2 to 50; default 1, the
// single form above). The batch form is still a GET:
//
//	GET {url}?since=…&until=…&op_key=a&op_key=b&op_key=c
//	→ 200 {"results":[{"op_key":"a","matches":[…]},
//	                  {"op_key":"b","matches":[]},
//	                  {"op_key":"c","error":"upstream timeout"}]}
//
// since and until span the windows of every operation asked; recipient and
// action are not sent. Each op_key asked has exactly one entry, holding
// either its matches (as in the single form; [] is "found none") or an
// error the endpoint had for that operation alone, which fails only that
// operation's lookup (it is retried). Entries are a list rather than an
// object keyed by op_key, because op_keys that differ only in letter case
// are distinct operations. A response that is not this shape, or holds an
// entry for an op_key not asked, fails every operation of the request; an
// op_key missing, listed twice, or with both or neither of matches and
// error fails that operation's lookup; a record listed under two op_keys
// proves neither. A batch whose URL would pass 6 KiB ([MaxURL]) is sent as
// several requests. An endpoint with max_batch above 1 is asked for a
// single operation in the batch form too.
package httplookup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the http adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("http", func() *Config { return &Config{} },
	func(name string, cfg *Config, env providers.Env) (providers.Lookup, error) {
		token := ""
		if cfg.TokenEnv != "" {
			var err error
			if token, err = config.Secret(env.Getenv, cfg.TokenEnv); err != nil {
				return nil, fmt.Errorf("token_env: %w", err)
			}
		}
		return New(name, cfg, token, nil), nil
	})

// Config is the kind-specific part of an http provider block.
type Config struct {
	// URL is the lookup endpoint, http or https. Required.
	URL string `toml:"url"`
	// TokenEnv names the environment variable holding a bearer token; empty
	// sends no Authorization header.
	TokenEnv string `toml:"token_env"`
	// SearchBy says how the endpoint finds records: "op_key" (the default:
	// the provider holds the key, so a record names its operation) or
	// "resemblance" (by recipient, payload and time: a record is proof only
	// inside the operation's own window and when no other operation could
	// own it).
	SearchBy string `toml:"search_by"`
	// MaxBatch is how many operations the endpoint answers for in one
	// request, in the batch form (see the package doc), 1 to [MaxMaxBatch].
	// Default 1: the single form, one request per operation. Only an
	// endpoint that searches by op_key can batch.
	MaxBatch int `toml:"max_batch"`
}

// MaxMaxBatch is the largest max_batch: 50 op_keys of up to 100 bytes,
// escaped, stay within [MaxURL].
const MaxMaxBatch = 50

// MaxURL is the longest URL the batch form sends, in bytes: proxies and
// servers commonly refuse longer ones (8 KB). A batch whose op_keys would
// make it longer is sent as several requests.
const MaxURL = 6 << 10

// SearchBy values.
const (
	SearchByKey         = "op_key"
	SearchByResemblance = "resemblance"
)

// Validate implements providers.Settings.
func (c *Config) Validate() []error {
	var errs []error
	switch c.SearchBy {
	case "", SearchByKey, SearchByResemblance:
	default:
		errs = append(errs, fmt.Errorf("search_by: must be %q or %q", SearchByKey, SearchByResemblance))
	}
	switch {
	case c.MaxBatch < 0 || c.MaxBatch > MaxMaxBatch:
		errs = append(errs, fmt.Errorf("max_batch: must be between 1 and %d", MaxMaxBatch))
	case c.MaxBatch > 1 && c.SearchBy == SearchByResemblance:
		errs = append(errs, fmt.Errorf("max_batch: an endpoint that searches by resemblance answers one operation per request: remove max_batch or set search_by = %q", SearchByKey))
	}
	switch u, err := url.Parse(c.URL); {
	case c.URL == "":
		errs = append(errs, errors.New("url: required"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, errors.New("url: must be an absolute http or https URL"))
	case u.User != nil:
		errs = append(errs, errors.New("url: must not carry credentials; use token_env"))
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "token_env", Name: c.TokenEnv, Required: c.TokenEnv != ""}}
}

// maxBody bounds what is read of a response; a longer body is an error.
const maxBody = 1 << 20

// Adapter looks operations up over the protocol.
type Adapter struct {
	name   string
	url    *url.URL
	token  string
	client *http.Client
	byKey  bool
	batch  int // max_batch; above 1: the endpoint speaks the batch form
}

var (
	_ providers.MatchingLookup = (*Adapter)(nil)
	_ providers.BatchLookup    = (*Adapter)(nil)
)

// Matching implements providers.MatchingLookup, as search_by says.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: a.byKey} }

// New returns an adapter for cfg (validated). transport carries requests
// (http.DefaultTransport when nil); it is wrapped so only GETs leave.
func New(name string, cfg *Config, token string, transport http.RoundTripper) *Adapter {
	u, _ := url.Parse(cfg.URL)
	return &Adapter{
		name:  name,
		url:   u,
		token: token,
		byKey: cfg.SearchBy != SearchByResemblance,
		batch: max(cfg.MaxBatch, 1),
		client: &http.Client{
			Transport: providers.ReadOnlyTransport{Base: transport},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return providers.Permanent(errors.New("redirects are not followed: point url at the final address"))
			},
		},
	}
}

type match struct {
	ID          string `json:"id"`
	CreatedAt   string `json:"created_at"`
	Recipient   string `json:"recipient"`
	PayloadHash string `json:"payload_hash"`
}

// Lookup implements providers.Lookup. No error it returns carries the
// token or the recipient, whatever the server or the network said.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if a.batch > 1 {
		// The endpoint speaks the batch form: one operation is a batch of one.
		answers, err := a.LookupBatch(ctx, []providers.Query{q})
		if err != nil {
			return nil, err
		}
		return answers[0].Records, answers[0].Err
	}
	records, err := a.lookup(ctx, q)
	return records, providers.Redact(err, a.token, q.Recipient, url.QueryEscape(q.Recipient))
}

func (a *Adapter) lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	u := *a.url
	params := u.Query()
	params.Set("op_key", q.OpKey)
	params.Set("recipient", q.Recipient)
	params.Set("action", q.Action)
	params.Set("since", q.Since.UTC().Format(time.RFC3339))
	params.Set("until", q.Until.UTC().Format(time.RFC3339))
	u.RawQuery = params.Encode()
	body, err := a.get(ctx, u.String())
	if err != nil {
		return nil, err
	}
	return a.parse(body)
}

// get sends one GET and returns the body of its 200 answer, or a
// classified error.
func (a *Adapter) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	req.Header.Set("Accept", "application/json")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		// The error names the URL with the query — op_key and recipient —
		// so only its cause is kept.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		if class, _ := providers.Classify(err); class == providers.ClassPermanent {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, providers.Transient(fmt.Errorf("%s: GET %s: %w", a.name, a.url.Host, err))
	}
	defer resp.Body.Close()
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))

	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, providers.RateLimited(providers.RetryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("%s: HTTP 429", a.name))
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return nil, providers.Transient(fmt.Errorf("%s: HTTP %d", a.name, resp.StatusCode))
	case resp.StatusCode != http.StatusOK:
		return nil, providers.Permanent(fmt.Errorf("%s: HTTP %d", a.name, resp.StatusCode))
	case readErr != nil:
		return nil, providers.Transient(fmt.Errorf("%s: read body: %w", a.name, readErr))
	case len(body) > maxBody:
		return nil, providers.Transient(fmt.Errorf("%s: response body larger than %d bytes", a.name, maxBody))
	}
	return body, nil
}

// parse reads a 200 body strictly: a missing matches field, or a match
// without an id or with a bad time, fails the lookup. The body is read by
// providers.DecodeJSON: one JSON value, valid UTF-8, no key twice in an
// object (nor two that differ only in letter case), and field names matched
// exactly — encoding/json alone would keep the last of duplicate keys and
// take "Payload_Hash" or "MATCHES" for the field, so a hostile endpoint
// could make a disagreeing record read as proof.
func (a *Adapter) parse(body []byte) ([]providers.Record, error) {
	var answer struct {
		// Stays nil for a missing field or null; [] is not nil.
		Matches []match `json:"matches"`
	}
	if err := providers.DecodeJSON(body, &answer); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed response: %w", a.name, err))
	}
	if answer.Matches == nil {
		return nil, providers.Transient(fmt.Errorf("%s: response has no matches field", a.name))
	}
	return a.records(answer.Matches)
}

// records turns matches into records: a match without an id or with a bad
// time fails them all.
func (a *Adapter) records(matches []match) ([]providers.Record, error) {
	records := make([]providers.Record, 0, len(matches))
	for i, m := range matches {
		if strings.TrimSpace(m.ID) == "" {
			return nil, providers.Transient(fmt.Errorf("%s: match %d has no id", a.name, i))
		}
		rec := providers.Record{ID: m.ID, Recipient: m.Recipient, PayloadHash: m.PayloadHash}
		if m.CreatedAt != "" {
			t, err := time.Parse(time.RFC3339, m.CreatedAt)
			if err != nil {
				return nil, providers.Transient(fmt.Errorf("%s: match %d: created_at is not RFC 3339", a.name, i))
			}
			rec.CreatedAt = t
		}
		rec.Excerpt = fmt.Sprintf("%s id=%s", a.name, providers.Truncate(m.ID, 64))
		records = append(records, rec)
	}
	return records, nil
}
