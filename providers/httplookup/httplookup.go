package httplookup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the http adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("http", newConfig, New)

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
	lists  bool
}

var (
	_ providers.MatchingLookup = (*Adapter)(nil)
	_ providers.BatchLookup    = (*Adapter)(nil)
	_ providers.Lister         = (*Adapter)(nil)
)

// Matching implements providers.MatchingLookup, as search_by says.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: a.byKey} }

// New returns an adapter for cfg (validated), reading the bearer token
// named by token_env, if any, from env. Requests go through env.ReadOnly:
// only GETs leave. The error names token_env, never the token.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	token := ""
	if cfg.TokenEnv != "" {
		var err error
		if token, err = config.Secret(env.Var, cfg.TokenEnv); err != nil {
			return nil, fmt.Errorf("token_env: %w", err)
		}
	}
	d := *cfg
	d.ApplyDefaults()
	u, err := url.Parse(d.URL)
	if err != nil {
		return nil, errors.New("url: must be an absolute http or https URL")
	}
	return &Adapter{
		name:  name,
		url:   u,
		token: token,
		byKey: d.SearchBy != SearchByResemblance,
		lists: d.List,
		batch: max(d.MaxBatch, 1),
		client: &http.Client{
			Transport:     env.ReadOnly(),
			CheckRedirect: providers.RefuseRedirects("url"),
		},
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() { a.client.CloseIdleConnections() }

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
	return a.parse(body, q.OpKey)
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
	body, err := providers.HTTPAnswer{Name: a.name, MaxBody: maxBody}.Read(ctx, resp)
	if err == nil && pagedLink(resp.Header) {
		return nil, providers.Transient(fmt.Errorf("%s: malformed response: a Link header says the answer is one page of several: the protocol has no pages; answer every record at once", a.name))
	}
	return body, err
}

// parse reads a 200 body strictly: a missing matches field, a key beside
// it at the top level, or a match without an id, with a bad time or state,
// or (searching by op_key) with another op_key, fails the lookup. The body
// is read by providers.DecodeJSON: one JSON value, valid UTF-8, no key
// twice in an object (nor two that differ only in letter case), and field
// names matched exactly — encoding/json alone would keep the last of
// duplicate keys and take "Payload_Hash" or "MATCHES" for the field, so a
// hostile endpoint could make a disagreeing record read as proof.
func (a *Adapter) parse(body []byte, opKey string) ([]providers.Record, error) {
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
	if err := checkKeys(body, "matches"); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed response: %w", a.name, err))
	}
	return a.records(answer.Matches, opKey)
}

// records turns the matches of the operation whose op_key is opKey into
// records: a match without an id, with a bad time or state, or carrying
// another op_key from an endpoint that searches by op_key fails them all.
func (a *Adapter) records(matches []match, opKey string) ([]providers.Record, error) {
	records := make([]providers.Record, 0, len(matches))
	for i, m := range matches {
		if strings.TrimSpace(m.ID) == "" {
			return nil, providers.Transient(fmt.Errorf("%s: match %d has no id", a.name, i))
		}
		if a.byKey && m.OpKey != nil && *m.OpKey != opKey {
			// Exactly: op_keys that differ only in letter case are two
			// operations.
			return nil, providers.Transient(fmt.Errorf("%s: malformed response: match %d carries another op_key than the one asked: an endpoint that searches by op_key returns only that key's records", a.name, i))
		}
		rec := providers.Record{ID: m.ID, Recipient: m.Recipient, PayloadHash: m.PayloadHash, Status: safetext.Truncate(m.Status, maxStatus)}
		if m.State != nil {
			rec.State = providers.State(*m.State)
			if !slices.Contains(states, rec.State) {
				return nil, providers.Transient(fmt.Errorf("%s: malformed response: match %d: state %q is none of effect, in_flight, failed", a.name, i, safetext.Truncate(*m.State, 32)))
			}
		}
		if m.CreatedAt != "" {
			t, err := time.Parse(time.RFC3339, m.CreatedAt)
			if err != nil {
				return nil, providers.Transient(fmt.Errorf("%s: match %d: created_at is not RFC 3339", a.name, i))
			}
			rec.CreatedAt = t
		}
		rec.Excerpt = fmt.Sprintf("%s id=%s", a.name, safetext.Truncate(m.ID, 64))
		records = append(records, rec)
	}
	return records, nil
}
