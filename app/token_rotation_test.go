package app_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/quickbooks"
	"github.com/sweeper/sweeper/providers/xero"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// intuit is QuickBooks Online's API and Intuit's OAuth token endpoint (and
// Xero's invoices and token endpoint, which rotate alike) as
// they treat rotation: each refresh answers a new access token and a new
// refresh token, and refuses the spent refresh token from then on
// (invalid_grant); only the newest access token is accepted (the others
// expired).
type intuit struct {
	mu      sync.Mutex
	n       int
	access  string // the one access token the API accepts ("" none)
	refresh string // the one refresh token the endpoint accepts
	// slow holds each refresh a while, so that two replicas' renewals
	// overlap.
	slow time.Duration

	posts, reused, writes atomic.Int64
}

func (f *intuit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/oauth2/v1/tokens/bearer" || r.URL.Path == "/connect/token"):
		f.posts.Add(1)
		time.Sleep(f.slow)
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "refresh_token" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_request"}`)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.PostForm.Get("refresh_token") != f.refresh {
			f.reused.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		f.n++
		f.access, f.refresh = fmt.Sprintf("eyJ-access-%d", f.n), fmt.Sprintf("AB11-refresh-%d", f.n)
		fmt.Fprintf(w, `{"access_token":%q,"refresh_token":%q,"token_type":"bearer","expires_in":3600,"x_refresh_token_expires_in":8726400}`, f.access, f.refresh)
	case r.Method == http.MethodGet && (r.URL.Path == "/v3/company/4620816365/query" || r.URL.Path == "/api.xro/2.0/Invoices"):
		f.mu.Lock()
		ok := f.access != "" && r.Header.Get("Authorization") == "Bearer "+f.access
		f.mu.Unlock()
		xero := r.URL.Path == "/api.xro/2.0/Invoices"
		switch {
		case !ok && xero:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"Type":null,"Title":"Unauthorized","Status":401,"Detail":"TokenExpired: token expired at 12/04/2026 08:00:00","Instance":"0f6a0c3e-7d4b-4c55-9e2a-1b5d5a5e3c11","Extensions":{}}`)
		case !ok:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"fault":{"error":[{"message":"message=AuthenticationFailed; errorCode=003200; statusCode=401","detail":"Token expired","code":"3200"}],"type":"AUTHENTICATION"},"time":"2026-12-04T08:00:00.000-08:00"}`)
		case xero:
			fmt.Fprint(w, `{"Id":"5c1b1c56-0f2b-4c8a-9d1e-3a1f6b7c8d9e","Status":"OK","ProviderName":"sweeper","DateTimeUTC":"/Date(1773151200000)/","Invoices":[]}`)
		default:
			fmt.Fprint(w, `{"QueryResponse":{},"time":"2026-12-04T08:00:00.000-08:00"}`)
		}
	default:
		f.writes.Add(1)
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// expire has every access token expire.
func (f *intuit) expire() {
	f.mu.Lock()
	f.access = ""
	f.mu.Unlock()
}

// TestRotatedRefreshTokenSurvives: QuickBooks Online and Xero rotate
// refresh tokens (Xero on every use), and refuse a spent one. With the token store
// (sweeper.provider_tokens), two replicas refused at once spend the
// refresh token once — the second waits on the row's lock and takes the
// first's access token; a replica holding an access token the other one
// replaced takes the newer without refreshing; and a restart, whose
// environment still holds the first (spent) tokens, starts from the
// newest stored ones. No refresh token is ever spent twice. Without the
// store, the same restart spends the first refresh token again and is
// refused — what the store is for. A refresh token configured anew (the
// app re-authorised) replaces the stored ones.
func TestRotatedRefreshTokenSurvives(t *testing.T) {
	t.Parallel()
	t.Run("quickbooks", func(t *testing.T) {
		t.Parallel()
		rotatedRefreshTokenSurvives(t, func(srv string, env providers.Env) (providers.Lookup, error) {
			cfg := quickbooks.Kind.NewSettings().(*quickbooks.Config)
			cfg.RealmID, cfg.APIBase, cfg.TokenURL = "4620816365", srv, srv+"/oauth2/v1/tokens/bearer"
			cfg.AccessTokenEnv, cfg.RefreshTokenEnv, cfg.ClientIDEnv, cfg.ClientSecretEnv = "OAUTH_ACCESS", "OAUTH_REFRESH", "OAUTH_ID", "OAUTH_SECRET"
			if errs := cfg.Validate(); len(errs) > 0 {
				return nil, errors.Join(errs...)
			}
			return quickbooks.Kind.New("books", cfg, env)
		})
	})
	t.Run("xero", func(t *testing.T) {
		t.Parallel()
		rotatedRefreshTokenSurvives(t, func(srv string, env providers.Env) (providers.Lookup, error) {
			cfg := xero.Kind.NewSettings().(*xero.Config)
			cfg.TenantID, cfg.APIBase, cfg.TokenURL = "3d5e8f0a-1b2c-4d3e-8f9a-0b1c2d3e4f5a", srv, srv+"/connect/token"
			cfg.AccessTokenEnv, cfg.RefreshTokenEnv, cfg.ClientIDEnv, cfg.ClientSecretEnv = "OAUTH_ACCESS", "OAUTH_REFRESH", "OAUTH_ID", "OAUTH_SECRET"
			if errs := cfg.Validate(); len(errs) > 0 {
				return nil, errors.Join(errs...)
			}
			return xero.Kind.New("invoices", cfg, env)
		})
	})
}

// rotatedRefreshTokenSurvives is TestRotatedRefreshTokenSurvives for the
// adapter build makes against the fake at srv.
func rotatedRefreshTokenSurvives(t *testing.T, build func(srv string, env providers.Env) (providers.Lookup, error)) {
	ctx := context.Background()
	fake := &intuit{refresh: "AB11-refresh-0", slow: 300 * time.Millisecond}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	store := health.NewTokenStore(dbtest.NewPool(t))
	vars := map[string]string{"OAUTH_ACCESS": "eyJ-access-0", "OAUTH_REFRESH": "AB11-refresh-0", "OAUTH_ID": "ABclient", "OAUTH_SECRET": "client-secret-9"}
	replica := func(tokens providers.TokenStore) providers.Lookup {
		t.Helper()
		l, err := build(srv.URL, providers.Env{Getenv: func(k string) string { return vars[k] }, Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	q := providers.Query{OpKey: "INV-1042", Recipient: "ap@example.com", Action: "issue_invoice", PayloadHash: strings.Repeat("ab", 32),
		FirstAttemptAt: time.Now().Add(-time.Hour), Since: time.Now().Add(-2 * time.Hour), Until: time.Now()}
	lookup := func(who string, l providers.Lookup) {
		t.Helper()
		if records, err := l.Lookup(ctx, q); err != nil || len(records) != 0 {
			t.Fatalf("%s: Lookup = %+v, %v; want none found, no error", who, records, err)
		}
	}

	// Two replicas, both refused the configured access token at once, then
	// (the stored row there already) both refused the token they share.
	a, b := replica(store), replica(store)
	for round := int64(1); round <= 2; round++ {
		fake.expire()
		var wg sync.WaitGroup
		for who, l := range map[string]providers.Lookup{"a": a, "b": b} {
			wg.Go(func() { lookup(who, l) })
		}
		wg.Wait()
		if n := fake.posts.Load(); n != round {
			t.Errorf("round %d: two replicas refused at once: %d refreshes in all, want %d", round, n, round)
		}
	}

	// a's token expires: a refreshes; b, refused the one it holds, takes
	// a's newer one from the store without refreshing.
	fake.expire()
	lookup("a, expired", a)
	lookup("b, holding the replaced token", b)
	if n := fake.posts.Load(); n != 3 {
		t.Errorf("after one expiry: %d refreshes, want 3", n)
	}

	// A restart: the environment still holds the first tokens, both spent.
	c := replica(store)
	lookup("restarted", c)
	fake.expire()
	lookup("restarted, expired", c)
	if n, reused := fake.posts.Load(), fake.reused.Load(); n != 4 || reused != 0 {
		t.Errorf("after the restart: %d refreshes, %d with a spent refresh token; want 4, none", n, reused)
	}

	// The same restart without the store spends the first refresh token
	// again, and is refused, naming no credential.
	_, err := replica(nil).Lookup(ctx, q)
	if class, _ := providers.Classify(err); class != providers.ClassPermanent || fake.reused.Load() != 1 {
		t.Errorf("without the store: %v (%s), %d spent tokens reused; want permanent, one", err, class, fake.reused.Load())
	}
	for _, secret := range []string{"AB11-refresh", "eyJ-access", "client-secret-9"} {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error quotes a credential: %v", err)
		}
	}
	// A person re-authorises the app: the new refresh token configured
	// replaces the stored chain.
	fake.mu.Lock()
	fake.refresh = "AB11-reissued"
	fake.mu.Unlock()
	vars["OAUTH_REFRESH"] = "AB11-reissued"
	fake.expire()
	lookup("re-authorised", replica(store))
	if fake.reused.Load() != 1 {
		t.Errorf("after a new refresh token was configured, the stored one was spent: %d reused", fake.reused.Load())
	}
	if fake.writes.Load() != 0 {
		t.Errorf("%d requests other than the query and the token refresh", fake.writes.Load())
	}
}
