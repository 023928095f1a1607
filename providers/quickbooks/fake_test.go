package quickbooks_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/quickbooks"
)

const (
	realmID = "9130357766541432"
	token   = "eyJlbmMiOiJBMTI4Q0JDLUhTMjU2fake-access-token"
)

// inv is one invoice the fake company holds.
type inv struct {
	ID        string
	DocNumber string
	Total     float64
	Voided    bool
	Email     string
	Created   time.Time
}

func (i inv) resource() map[string]any {
	total, balance, note := i.Total, i.Total, "Thanks for your business."
	if i.Voided {
		total, balance, note = 0, 0, "Voided"
	}
	r := map[string]any{
		"Id": i.ID, "SyncToken": "0", "domain": "QBO", "sparse": false,
		"DocNumber": i.DocNumber, "TxnDate": i.Created.Format("2006-01-02"), "DueDate": i.Created.AddDate(0, 0, 30).Format("2006-01-02"),
		"TotalAmt": total, "Balance": balance, "PrivateNote": note,
		"CurrencyRef": map[string]any{"value": "USD", "name": "United States Dollar"},
		"CustomerRef": map[string]any{"value": "58", "name": "Acme Corp"},
		"Line": []any{map[string]any{"Id": "1", "LineNum": 1, "Amount": total, "DetailType": "SalesItemLineDetail",
			"SalesItemLineDetail": map[string]any{"ItemRef": map[string]any{"value": "1", "name": "Services"}}}},
		"EmailStatus": "NotSet", "PrintStatus": "NeedToPrint",
		"MetaData": map[string]any{
			"CreateTime":      i.Created.In(time.FixedZone("PST", -8*3600)).Format("2006-01-02T15:04:05-07:00"),
			"LastUpdatedTime": i.Created.In(time.FixedZone("PST", -8*3600)).Format("2006-01-02T15:04:05-07:00"),
		},
	}
	if i.Email != "" {
		r["BillEmail"] = map[string]any{"Address": i.Email}
	}
	return r
}

// answer renders one answer of the query endpoint; no invoices is the
// empty QueryResponse QuickBooks gives.
func answer(start int, invoices ...inv) []byte {
	qr := map[string]any{}
	if len(invoices) > 0 {
		items := []any{}
		for _, i := range invoices {
			items = append(items, i.resource())
		}
		qr = map[string]any{"Invoice": items, "startPosition": start, "maxResults": len(items)}
	}
	b, _ := json.Marshal(map[string]any{"QueryResponse": qr, "time": "2026-12-04T08:00:00.000-08:00"})
	return b
}

func fault(w http.ResponseWriter, status int, code, typ string) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"Fault":{"Error":[{"Message":"message","Detail":"detail","code":%q}],"type":%q},"time":"2026-12-04T08:00:00.000-08:00"}`, code, typ)
}

// queryRE is the one query the fake understands, as QuickBooks' query
// language reads it: a literal in single quotes where \' is a quote.
var queryRE = regexp.MustCompile(`^SELECT \* FROM Invoice WHERE DocNumber = '((?:[^'\\]|\\')*)' STARTPOSITION ([0-9]+) MAXRESULTS ([0-9]+)$`)

// company is a fake QuickBooks Online API, shaped after Intuit's
// documentation: it parses the query (a malformed one is a 400
// QueryParserError), filters on DocNumber unless ignoreFilter, pages by
// STARTPOSITION/MAXRESULTS (at most 1000), and answers 429 when limited.
type company struct {
	mu           sync.Mutex
	invoices     []inv
	ignoreFilter bool
	limited      string // a 429's Retry-After ("-": none); "" not limited
	literals     []string
	access       string // the access token the API accepts
	refresh      string // the refresh token the token endpoint accepts
	issued       int
	tokenFail    int // the token endpoint's status; 0: it issues
	tokenPosts   atomic.Int64

	writes atomic.Int64
	gets   atomic.Int64
}

func newCompany(t *testing.T, invoices ...inv) (*company, *httptest.Server) {
	c := &company{invoices: invoices, access: token, refresh: "AB11-refresh-0"}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

func (c *company) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/oauth2/v1/tokens/bearer" {
		c.token(w, r)
		return
	}
	if r.Method != http.MethodGet {
		c.writes.Add(1)
		fault(w, http.StatusMethodNotAllowed, "405", "ValidationFault")
		return
	}
	c.gets.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+c.access {
		fault(w, http.StatusUnauthorized, "3200", "AUTHENTICATION")
		return
	}
	if c.limited != "" {
		if c.limited != "-" {
			w.Header().Set("Retry-After", c.limited)
		}
		fault(w, http.StatusTooManyRequests, "003001", "ThrottleExceeded")
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	switch r.URL.Path {
	case "/v3/company/" + realmID + "/companyinfo/" + realmID:
		fmt.Fprintf(w, `{"CompanyInfo":{"Id":%q,"CompanyName":"Acme Books","domain":"QBO"},"time":"2026-12-04T08:00:00.000-08:00"}`, realmID)
	case "/v3/company/" + realmID + "/query":
		if r.URL.Query().Get("minorversion") != "75" {
			fault(w, http.StatusBadRequest, "2010", "ValidationFault")
			return
		}
		m := queryRE.FindStringSubmatch(r.URL.Query().Get("query"))
		if m == nil {
			fault(w, http.StatusBadRequest, "4000", "QueryParserError")
			return
		}
		literal := strings.ReplaceAll(m[1], `\'`, `'`)
		c.literals = append(c.literals, literal)
		start, _ := strconv.Atoi(m[2])
		max, _ := strconv.Atoi(m[3])
		if start < 1 || max < 1 || max > 1000 {
			fault(w, http.StatusBadRequest, "4001", "QueryValidationError")
			return
		}
		var match []inv
		for _, i := range c.invoices {
			if c.ignoreFilter || i.DocNumber == literal {
				match = append(match, i)
			}
		}
		from := min(start-1, len(match))
		to := min(from+max, len(match))
		w.Write(answer(start, match[from:to]...)) //nolint:errcheck // the test reads what arrives
	default:
		fault(w, http.StatusNotFound, "610", "ValidationFault")
	}
}

// adapter returns an adapter for the fake at srv.
func adapter(t *testing.T, srv *httptest.Server) *quickbooks.Adapter {
	t.Helper()
	cfg := &quickbooks.Config{RealmID: realmID, AccessTokenEnv: "QBO_TOKEN", APIBase: srv.URL}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	a, err := quickbooks.New("invoices", cfg, providertest.Env(nil, "QBO_TOKEN", token))
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

// token is Intuit's refresh token grant: HTTP Basic with the app's client
// id and secret, the current refresh token; it issues a new access token
// and rotates the refresh token.
func (c *company) token(w http.ResponseWriter, r *http.Request) {
	c.tokenPosts.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	id, secret, ok := r.BasicAuth()
	if c.tokenFail != 0 || !ok || id != clientID || secret != clientSecret || r.ParseForm() != nil ||
		r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != c.refresh {
		w.WriteHeader(cmp.Or(c.tokenFail, http.StatusBadRequest))
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
		return
	}
	c.issued++
	c.access = fmt.Sprintf("fresh-access-%d", c.issued)
	c.refresh = fmt.Sprintf("AB11-refresh-%d", c.issued)
	fmt.Fprintf(w, `{"token_type":"bearer","access_token":%q,"refresh_token":%q,"expires_in":3600,"x_refresh_token_expires_in":8726400}`, c.access, c.refresh)
}

const (
	clientID     = "ABclient0id"
	clientSecret = "client-secret-9f2e"
)

// refreshing returns an adapter for the fake at srv that refreshes its
// token there.
func refreshing(t *testing.T, srv *httptest.Server) *quickbooks.Adapter {
	t.Helper()
	cfg := &quickbooks.Config{RealmID: realmID, AccessTokenEnv: "QBO_TOKEN", APIBase: srv.URL, TokenURL: srv.URL + "/oauth2/v1/tokens/bearer",
		RefreshTokenEnv: "QBO_REFRESH", ClientIDEnv: "QBO_CLIENT_ID", ClientSecretEnv: "QBO_CLIENT_SECRET"}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	a, err := quickbooks.New("invoices", cfg, providertest.Env(nil, "QBO_TOKEN", token, "QBO_REFRESH", "AB11-refresh-0",
		"QBO_CLIENT_ID", clientID, "QBO_CLIENT_SECRET", clientSecret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}
