package xero

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the xero adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("xero", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// apiHost is Xero's API host: every request is built for it, then
	// sent to api_base when one is set.
	apiHost = "api.xero.com"
	// invoicesPath is the Accounting API's invoices.
	invoicesPath = "/api.xro/2.0/Invoices"
	// pageSize is how many invoices Xero returns per page: a full page
	// means another may follow.
	pageSize = 100
	// maxPages bounds the pages read for one op_key.
	maxPages = 10
	// maxBody bounds what is read of a response.
	maxBody = 8 << 20
	// maxDayWait bounds how long the day's limit takes Xero out: its
	// window is a rolling day. defaultDayWait is that wait when Xero's
	// 429 gives no Retry-After: the provider is probed again after it.
	maxDayWait     = 24 * time.Hour
	defaultDayWait = time.Hour
)

// Adapter looks operations up among one Xero organisation's invoices, by
// the invoice's Reference holding the op_key.
type Adapter struct {
	name   string
	tokens *providers.RefreshingToken
	tenant string
	client *http.Client
}

var _ providers.MatchingLookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the access token that
// access_token_env names from env. Requests are built for api.xero.com,
// pass the read-only check (GETs only), and are then sent to api_base. It
// fails when the token is not set (the error names the variable, never
// the value) or api_base is not a URL.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	token, err := config.BlockSecret(env.Var, "access_token_env", cfg.AccessTokenEnv)
	if err != nil {
		return nil, err
	}
	base, err := providers.ParseAPIBase(cfg.APIBase)
	if err != nil {
		return nil, err
	}
	// One app's connection: blocks of several organisations reached
	// through it share its tokens.
	t, err := providers.NewRefreshingToken(name, token, providers.RefreshKeys{
		RefreshTokenEnv: cfg.RefreshTokenEnv, ClientIDEnv: cfg.ClientIDEnv, ClientSecretEnv: cfg.ClientSecretEnv,
		TokenURL: cfg.TokenURL, DefaultURL: DefaultTokenURL,
		StoreKey: func(clientID string) string { return "xero:" + clientID },
	}, env)
	if err != nil {
		return nil, err
	}
	return &Adapter{
		name:   name,
		tokens: t,
		tenant: cfg.TenantID,
		client: &http.Client{
			Transport:     providers.ReadOnlyTransport{Base: providers.RebaseTransport{Host: apiHost, Base: base, Next: env.RoundTripper()}},
			CheckRedirect: providers.RefuseRedirects("api_base"),
		},
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() {
	a.client.CloseIdleConnections()
	a.tokens.Close()
}

// Matching implements providers.MatchingLookup: every record carries the
// op_key in its Reference, compared exactly.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// Lookup implements providers.Lookup. It returns the invoices whose
// Reference is q.OpKey exactly, or an error classified for the pipeline
// that names neither the token nor the recipient.
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
	if strings.ContainsAny(q.OpKey, "\"\\") {
		return nil, providers.Permanent(fmt.Errorf("%s: an op_key holding '\"' or '\\' cannot be quoted in Xero's where filter", a.name))
	}
	var records []providers.Record
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, providers.Permanent(fmt.Errorf("%s: more than %d pages of invoices for one op_key, too many to settle automatically", a.name, maxPages))
		}
		params := url.Values{}
		params.Set("where", `Reference=="`+q.OpKey+`"`)
		params.Set("page", strconv.Itoa(page))
		body, err := a.get(ctx, invoicesPath, params, "the invoices")
		if err != nil {
			return nil, err
		}
		p, err := decodePage(body)
		if err != nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer to the invoices: %w", a.name, err))
		}
		for i, inv := range p.Invoices {
			if inv.Reference != q.OpKey {
				continue // Xero's filter is no proof
			}
			rec, err := record(inv)
			if err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: invoice %d: %w", a.name, i, err))
			}
			records = append(records, rec)
		}
		if len(p.Invoices) < pageSize && (p.PageCount == 0 || page >= p.PageCount) {
			break
		}
	}
	records, err := providers.MergeDuplicates(records)
	if err != nil {
		return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	return records, nil
}

// get sends one GET with the token and tenant and reads the answer. A 429
// for the day's limit is the provider being out for the day (transient,
// counted against its health); for the minute's or concurrency limit it is
// rate limited for Xero's Retry-After.
func (a *Adapter) get(ctx context.Context, path string, params url.Values, what string) ([]byte, error) {
	token := a.tokens.Current()
	body, err := a.getWith(ctx, path, params, what, token)
	if !errors.Is(err, errUnauthorized) {
		return body, err
	}
	if !a.tokens.Refreshes() {
		return nil, providers.Permanent(fmt.Errorf("%s: HTTP 401 to %s: the access token is expired or refused (access_token_env; no refresh_token_env to refresh it)", a.name, what))
	}
	for range a.tokens.Renewals() {
		if token, err = a.tokens.Renew(ctx, token); err != nil {
			return nil, err
		}
		if body, err = a.getWith(ctx, path, params, what, token); !errors.Is(err, errUnauthorized) {
			return body, err
		}
	}
	return nil, providers.Permanent(fmt.Errorf("%s: HTTP 401 to %s with a refreshed access token: the connection cannot read the organisation", a.name, what))
}

// errUnauthorized is Xero refusing the access token (401).
var errUnauthorized = errors.New("HTTP 401")

// getWith is one GET with token (see [Adapter.get]); a 401 is
// errUnauthorized, its body unread.
func (a *Adapter) getWith(ctx context.Context, path string, params url.Values, what, token string) ([]byte, error) {
	u := url.URL{Scheme: "https", Host: apiHost, Path: path, RawQuery: params.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if path != connectionsPath {
		req.Header.Set("Xero-tenant-id", a.tenant)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		// The error names the URL, which holds the op_key: only its cause
		// is kept.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		if ctx.Err() != nil {
			return nil, providers.Transient(fmt.Errorf("%s: %w", a.name, ctx.Err()))
		}
		if class, _ := providers.Classify(err); class == providers.ClassPermanent {
			return nil, fmt.Errorf("%s: %w", a.name, err)
		}
		return nil, providers.Transient(fmt.Errorf("%s: GET %s: %w", a.name, apiHost, err))
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, errUnauthorized
	}
	problem, outFor := "", time.Duration(0)
	if resp.StatusCode == http.StatusTooManyRequests {
		problem = resp.Header.Get("X-Rate-Limit-Problem")
		if problem == "" && strings.TrimSpace(resp.Header.Get("X-DayLimit-Remaining")) == "0" {
			problem = "day"
		}
		if wait, ok := providers.RetryAfterWithin(resp.Header.Get("Retry-After"), maxDayWait); ok {
			outFor = wait
		} else {
			outFor = defaultDayWait
		}
	}
	body, err := providers.HTTPAnswer{
		Name:    a.name,
		MaxBody: maxBody,
		Detail: func([]byte) string {
			if problem != "" {
				return " to " + what + " (Xero's " + providers.Word(problem, 40) + " limit)"
			}
			return " to " + what
		},
	}.Read(ctx, resp)
	if err != nil && strings.EqualFold(problem, "day") {
		// The day's calls are spent: every lookup fails until Xero's
		// Retry-After, hours perhaps. It is the provider's outage (its
		// health takes it down at once and probes it only then), not each
		// operation's rate limit.
		until := time.Now().Add(outFor)
		return nil, providers.OutUntil(until, fmt.Errorf("%s: HTTP 429 to %s: Xero's daily call limit for the organisation is reached, until %s",
			a.name, what, until.UTC().Format(time.RFC3339)))
	}
	return body, err
}

// invoice is an invoice as Xero answers it.
type invoice struct {
	InvoiceID      string      `json:"InvoiceID"`
	InvoiceNumber  string      `json:"InvoiceNumber"`
	Reference      string      `json:"Reference"`
	Status         string      `json:"Status"`
	Type           string      `json:"Type"`
	Contact        *contact    `json:"Contact"`
	Total          json.Number `json:"Total"`
	CurrencyCode   string      `json:"CurrencyCode"`
	UpdatedDateUTC string      `json:"UpdatedDateUTC"`
}

type contact struct {
	ContactID    string `json:"ContactID"`
	EmailAddress string `json:"EmailAddress"`
}

// page is one page of the invoices.
type page struct {
	Invoices  []invoice
	PageCount int // pagination.pageCount, 0 when Xero sent none
}

// topKeys are the keys Xero documents on the invoices' answer; any other is
// a malformed answer, since a pagination signal the adapter does not
// follow could hide invoices.
var topKeys = []string{"Id", "Status", "ProviderName", "DateTimeUTC", "Invoices", "pagination", "Warnings"}

// idRE is a Xero id: a UUID.
var idRE = tenantRE

// onlyKeys reads data as one strict JSON object whose keys are all among
// allowed, and returns it.
func onlyKeys(data []byte, allowed ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := providers.DecodeJSON(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("unknown key %s", strconv.QuoteToASCII(providers.Word(k, 40)))
		}
	}
	return m, nil
}

// decodePage reads the invoices' answer strictly: one JSON object (no key
// twice, none differing only in letter case, none Xero does not document)
// with an Invoices array of at most a page, each with an InvoiceID, a
// Status and UpdatedDateUTC; pagination, when present, an object of
// counts.
func decodePage(data []byte) (*page, error) {
	top, err := onlyKeys(data, topKeys...)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := providers.DecodeJSON(top["Invoices"], &raws); err != nil || raws == nil {
		return nil, errors.New("no Invoices array")
	}
	if len(raws) > pageSize {
		return nil, fmt.Errorf("a page of %d invoices, more than Xero's %d", len(raws), pageSize)
	}
	var p page
	for i, raw := range raws {
		var inv invoice
		if err := providers.DecodeJSON(raw, &inv); err != nil {
			return nil, fmt.Errorf("invoice %d: %w", i, err)
		}
		switch {
		case !idRE.MatchString(inv.InvoiceID):
			return nil, fmt.Errorf("invoice %d: InvoiceID is not an id", i)
		case inv.Status == "":
			return nil, fmt.Errorf("invoice %d: no Status", i)
		}
		p.Invoices = append(p.Invoices, inv)
	}
	if raw, ok := top["pagination"]; ok {
		pg, err := onlyKeys(raw, "page", "pageSize", "pageCount", "itemCount")
		if err != nil {
			return nil, fmt.Errorf("pagination: %w", err)
		}
		if err := providers.DecodeJSON(pg["pageCount"], &p.PageCount); err != nil || p.PageCount < 0 {
			return nil, errors.New("pagination without a pageCount")
		}
	}
	return &p, nil
}

// dateRE is Xero's JSON date: /Date(milliseconds since 1970[±hhmm])/.
var dateRE = regexp.MustCompile(`^/Date\((-?[0-9]{1,15})([+-][0-9]{4})?\)/$`)

// parseDate reads Xero's /Date(…)/ form; the offset does not move the
// instant (the milliseconds are UTC).
func parseDate(s string) (time.Time, error) {
	m := dateRE.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, errors.New("UpdatedDateUTC is not a /Date(…)/ date")
	}
	ms, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}, errors.New("UpdatedDateUTC is not a date")
	}
	return time.UnixMilli(ms).UTC(), nil
}

// record turns an invoice holding the op_key into a providers.Record.
// Xero gives no creation time: UpdatedDateUTC, the latest change, stands
// for it.
func record(inv invoice) (providers.Record, error) {
	state, ok := stateOf(inv.Status)
	if !ok {
		return providers.Record{}, fmt.Errorf("status %s is none Xero documents", strconv.QuoteToASCII(providers.Word(inv.Status, 40)))
	}
	at, err := parseDate(inv.UpdatedDateUTC)
	if err != nil {
		return providers.Record{}, err
	}
	status := statusText(inv.Status)
	rec := providers.Record{
		ID:        inv.InvoiceID,
		CreatedAt: at,
		Excerpt:   fmt.Sprintf("xero invoice %s %s", inv.InvoiceID, status),
		State:     state,
		Status:    status,
	}
	if inv.Contact != nil {
		rec.Recipient = inv.Contact.EmailAddress
	}
	if inv.Total == "" || inv.CurrencyCode == "" {
		return rec, nil // nothing to compare: never agreement
	}
	fields := map[string]any{"total": inv.Total.String(), "currency": inv.CurrencyCode}
	rec.Fields = fields
	if state == providers.StateEffect {
		rec.PayloadHash, _ = ledger.PayloadHashOf(fields)
	}
	return rec, nil
}
