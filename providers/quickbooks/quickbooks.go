package quickbooks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the quickbooks adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("quickbooks", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// MaxDocNumber is the most characters QuickBooks Online keeps in an
	// invoice's DocNumber: a longer op_key cannot be the DocNumber.
	MaxDocNumber = 21
	// minorVersion is the API minor version asked for.
	minorVersion = "75"
	// defaultPageSize is the MAXRESULTS asked for (QuickBooks' most).
	defaultPageSize = 1000
	// maxPages bounds how many pages of one query are followed: an answer
	// still full past it is malformed.
	maxPages = 10
	// maxBody bounds what is read of a response.
	maxBody = 8 << 20
	// defaultRetry is the wait after a 429 without Retry-After: the
	// per-minute limit's window.
	defaultRetry = time.Minute
)

// Adapter looks operations up in one QuickBooks Online company's invoices,
// by DocNumber.
type Adapter struct {
	name     string
	realm    string
	tokens   *providers.RefreshingToken
	base     *url.URL
	pageSize int
	client   *http.Client
}

var _ providers.MatchingLookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the access token
// that access_token_env names from env. Requests go through env.ReadOnly:
// only GETs leave. It fails when the token is not set (the error names the
// variable, never the value).
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	token, err := config.BlockSecret(env.Var, "access_token_env", cfg.AccessTokenEnv)
	if err != nil {
		return nil, err
	}
	base, err := providers.ParseAPIBase(cmp.Or(cfg.APIBase, DefaultAPIBase))
	if err != nil {
		return nil, err
	}
	if !realmRE.MatchString(cfg.RealmID) {
		return nil, errors.New("realm_id: required: the company's realm id, 1-32 digits")
	}
	t, err := providers.NewRefreshingToken(name, token, providers.RefreshKeys{
		RefreshTokenEnv: cfg.RefreshTokenEnv, ClientIDEnv: cfg.ClientIDEnv, ClientSecretEnv: cfg.ClientSecretEnv,
		TokenURL: cfg.TokenURL, DefaultURL: DefaultTokenURL,
		StoreKey: func(string) string { return "quickbooks:" + cfg.RealmID },
	}, env)
	if err != nil {
		return nil, err
	}
	return &Adapter{
		name: name, realm: cfg.RealmID, tokens: t, base: base, pageSize: defaultPageSize,
		client: &http.Client{Transport: env.ReadOnly(), CheckRedirect: providers.RefuseRedirects("api_base")},
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() {
	a.client.CloseIdleConnections()
	a.tokens.Close()
}

// Matching implements providers.MatchingLookup: every record is read by
// its DocNumber, which is the op_key.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// queryAnswer is one answer of the query endpoint; its keys are all
// Intuit's documented ones, and any other is a malformed answer.
type queryAnswer struct {
	QueryResponse *queryResponse `json:"QueryResponse"`
	Time          string         `json:"time"`
}

type queryResponse struct {
	Invoice       []json.RawMessage `json:"Invoice"`
	StartPosition *int              `json:"startPosition"`
	MaxResults    *int              `json:"maxResults"`
	TotalCount    *int              `json:"totalCount"`
}

var (
	answerKeys   = map[string]bool{"QueryResponse": true, "time": true}
	responseKeys = map[string]bool{"Invoice": true, "startPosition": true, "maxResults": true, "totalCount": true}
)

// invoice is what the adapter reads of an invoice.
type invoice struct {
	ID          string   `json:"Id"`
	DocNumber   string   `json:"DocNumber"`
	TotalAmt    float64  `json:"TotalAmt"`
	Balance     *float64 `json:"Balance"`
	PrivateNote string   `json:"PrivateNote"`
	BillEmail   *struct {
		Address string `json:"Address"`
	} `json:"BillEmail"`
	MetaData *struct {
		CreateTime string `json:"CreateTime"`
	} `json:"MetaData"`
}

// Lookup implements providers.Lookup. It returns the company's invoices
// whose DocNumber is q.OpKey (see the package doc), or an error classified
// for the pipeline that names neither the token nor the recipient.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	records, err := a.lookup(ctx, q)
	if err != nil {
		return nil, providers.Redact(err, append(a.tokens.Secrets(), q.Recipient, strings.TrimSpace(q.Recipient))...)
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
	literal, err := QuoteLiteral(q.OpKey)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: the op_key cannot be looked up as a DocNumber: %w", a.name, err))
	}
	var records []providers.Record
	path := "/v3/company/" + a.realm + "/query"
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: still full pages after %d", a.name, maxPages))
		}
		start := 1 + page*a.pageSize
		params := url.Values{}
		params.Set("query", fmt.Sprintf("SELECT * FROM Invoice WHERE DocNumber = %s STARTPOSITION %d MAXRESULTS %d", literal, start, a.pageSize))
		params.Set("minorversion", minorVersion)
		body, err := a.get(ctx, path, params)
		if err != nil {
			return nil, err
		}
		invoices, err := decodeAnswer(body, start)
		if err != nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d: %w", a.name, page+1, err))
		}
		for i, raw := range invoices {
			var inv invoice
			if err := providers.DecodeJSON(raw, &inv); err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d, invoice %d: %w", a.name, page+1, i, err))
			}
			if inv.DocNumber != q.OpKey {
				continue // not the operation's: the filter is no proof
			}
			rec, err := record(inv)
			if err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d, invoice %d: %w", a.name, page+1, i, err))
			}
			records = append(records, rec)
		}
		if len(invoices) < a.pageSize {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, providers.Transient(fmt.Errorf("%s: %w", a.name, err))
		}
	}
	// An invoice on two pages is one record; two invoices under one Id are
	// no answer.
	records, err = providers.MergeDuplicates(records)
	if err != nil {
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	return records, nil
}

// QuoteLiteral returns opKey as a string literal of QuickBooks' query
// language: in single quotes, a quote escaped as \'. It refuses what it
// cannot quote safely or what cannot be a DocNumber: more than
// [MaxDocNumber] characters, a backslash (Intuit documents no escape for
// it), a control character or invalid UTF-8.
func QuoteLiteral(opKey string) (string, error) {
	switch {
	case !utf8.ValidString(opKey):
		return "", errors.New("not valid UTF-8")
	case utf8.RuneCountInString(opKey) > MaxDocNumber:
		return "", fmt.Errorf("longer than the %d characters of a DocNumber", MaxDocNumber)
	case strings.ContainsRune(opKey, '\\'):
		return "", errors.New("a backslash, which the query language cannot quote safely")
	case strings.ContainsFunc(opKey, unicode.IsControl):
		return "", errors.New("a control character")
	}
	return "'" + strings.ReplaceAll(opKey, "'", `\'`) + "'", nil
}

// decodeAnswer reads one answer of the query endpoint strictly: documented
// keys only; an empty QueryResponse is no invoices; otherwise an Invoice
// array, startPosition the one asked for and maxResults its length.
func decodeAnswer(body []byte, start int) ([]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := providers.DecodeJSON(body, &top); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(top)) { // the same body, the same error
		if !answerKeys[k] {
			return nil, fmt.Errorf("an unknown key %q", providers.Word(k, 40))
		}
	}
	var ans queryAnswer
	if err := providers.DecodeJSON(body, &ans); err != nil {
		return nil, err
	}
	if ans.QueryResponse == nil {
		return nil, errors.New("no QueryResponse")
	}
	var inner map[string]json.RawMessage
	if err := providers.DecodeJSON(top["QueryResponse"], &inner); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(inner)) {
		if !responseKeys[k] {
			return nil, fmt.Errorf("an unknown key %q in QueryResponse", providers.Word(k, 40))
		}
	}
	r := ans.QueryResponse
	if len(inner) == 0 {
		return nil, nil
	}
	switch {
	case r.Invoice == nil:
		return nil, errors.New("no Invoice array")
	case r.StartPosition == nil || *r.StartPosition != start:
		return nil, fmt.Errorf("startPosition is not %d", start)
	case r.MaxResults == nil || *r.MaxResults != len(r.Invoice):
		return nil, errors.New("maxResults is not the number of invoices")
	}
	return r.Invoice, nil
}

// record turns an invoice of the operation into a record. Amounts, the
// customer and notes are never kept.
func record(inv invoice) (providers.Record, error) {
	if err := ledger.CheckRecordID(inv.ID); err != nil {
		return providers.Record{}, fmt.Errorf("the invoice Id: %w", err)
	}
	if inv.Balance == nil {
		return providers.Record{}, errors.New("no Balance")
	}
	if inv.MetaData == nil || inv.MetaData.CreateTime == "" {
		return providers.Record{}, errors.New("no MetaData.CreateTime")
	}
	created, err := time.Parse(time.RFC3339, inv.MetaData.CreateTime)
	if err != nil {
		return providers.Record{}, errors.New("MetaData.CreateTime is not a date with an offset")
	}
	state, status := invoiceState(inv)
	rec := providers.Record{
		ID:        inv.ID,
		State:     state,
		Status:    status,
		CreatedAt: created.UTC(),
		Excerpt:   "quickbooks invoice " + status,
	}
	if inv.BillEmail != nil {
		rec.Recipient = inv.BillEmail.Address
	}
	return rec, nil
}

// get sends one GET with the access token. 429 is rate limited, for
// Retry-After's delay or a minute. 401 is permanent, unless refresh is
// configured: then the token is renewed and the GET sent again — twice at
// most, since a token another replica or an earlier run stored may have
// expired since; a token refreshed now and refused is permanent.
func (a *Adapter) get(ctx context.Context, path string, params url.Values) ([]byte, error) {
	token := a.tokens.Current()
	body, err := a.getWith(ctx, path, params, token)
	if !errors.Is(err, errUnauthorized) {
		return body, err
	}
	if !a.tokens.Refreshes() {
		return nil, providers.Permanent(fmt.Errorf("%s: HTTP 401: the access token is expired or refused (access_token_env; no refresh_token_env to refresh it)", a.name))
	}
	for range a.tokens.Renewals() {
		if token, err = a.tokens.Renew(ctx, token); err != nil {
			return nil, err
		}
		if body, err = a.getWith(ctx, path, params, token); !errors.Is(err, errUnauthorized) {
			return body, err
		}
	}
	return nil, providers.Permanent(fmt.Errorf("%s: HTTP 401 with a refreshed access token: the app cannot read realm_id", a.name))
}

var errUnauthorized = errors.New("HTTP 401")

func (a *Adapter) getWith(ctx context.Context, path string, params url.Values, token string) ([]byte, error) {
	u := *a.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	answer := providers.HTTPAnswer{
		Name: a.name, MaxBody: maxBody, Detail: faultCode,
		RetryAfter: func(h http.Header) time.Duration {
			if wait, ok := providers.ParseRetryAfter(h.Get("Retry-After")); ok && wait > 0 {
				return wait
			}
			return defaultRetry
		},
		Status: func(status int) error {
			if status == http.StatusUnauthorized {
				return errUnauthorized
			}
			return nil
		},
	}
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
	return answer.Read(ctx, resp)
}

// faultCode names the code of a QuickBooks fault body
// ({"Fault":{"Error":[{"Message","Detail","code"}],"type"},"time"}), and
// nothing else of it: its detail can quote the query.
func faultCode(body []byte) string {
	var f struct {
		Fault *struct {
			Error []struct {
				Code string `json:"code"`
			} `json:"Error"`
		} `json:"Fault"`
	}
	if providers.DecodeJSON(body, &f) != nil || f.Fault == nil || len(f.Fault.Error) == 0 || providers.Word(f.Fault.Error[0].Code, 40) == "-" {
		return ""
	}
	return " (" + f.Fault.Error[0].Code + ")"
}
