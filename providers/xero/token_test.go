package xero_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/xero"
)

// TestTokenRefresh: with the refresh keys, an access token Xero refuses
// (401) is renewed at the token endpoint — a POST with the refresh token
// grant and the app's Basic auth, the only request that is not a GET — and
// the GET sent again; the rotated refresh token is the one spent next
// (held in memory here: no store). A refusal by the token endpoint is
// permanent and names no credential.
func TestTokenRefresh(t *testing.T) {
	t.Parallel()
	f, api := newFake(t, invoiceN(1, opKey, "PAID"))
	var posts, reused atomic.Int64
	current := "rt-0"
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		user, pass, _ := r.BasicAuth()
		if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "refresh_token" || user != "app-id" || pass != "app-secret" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_request"}`)
			return
		}
		n := posts.Add(1)
		if r.PostForm.Get("refresh_token") != current {
			reused.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		current = fmt.Sprintf("rt-%d", n)
		// Xero's fake accepts only its one token: the refresh answers it.
		fmt.Fprintf(w, `{"id_token":"eyJ-id","access_token":%q,"expires_in":1800,"token_type":"Bearer","refresh_token":%q,"scope":"offline_access accounting.transactions.read"}`, token, current)
	}))
	t.Cleanup(tokens.Close)
	build := func(refresh bool) *xero.Adapter {
		cfg := xero.Kind.NewSettings().(*xero.Config)
		cfg.AccessTokenEnv, cfg.APIBase, cfg.TenantID, cfg.TokenURL = "XERO_TOKEN", api.URL, tenant, tokens.URL+"/connect/token"
		if refresh {
			cfg.RefreshTokenEnv, cfg.ClientIDEnv, cfg.ClientSecretEnv = "XERO_REFRESH", "XERO_ID", "XERO_SECRET"
		}
		if errs := cfg.Validate(); len(errs) != 0 {
			t.Fatalf("config: %v", errs)
		}
		a, err := xero.New("books", cfg, providertest.Env(nil, "XERO_TOKEN", "expired-access", "XERO_REFRESH", "rt-0", "XERO_ID", "app-id", "XERO_SECRET", "app-secret"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		return a
	}

	a := build(true)
	for range 2 {
		if records, err := lookup(t, a, query); err != nil || len(records) != 1 {
			t.Fatalf("Lookup = %+v, %v; want the invoice", records, err)
		}
	}
	if posts.Load() != 1 || reused.Load() != 0 {
		t.Errorf("%d refreshes, %d with a spent token; want one, none", posts.Load(), reused.Load())
	}
	if f.writes.Load() != 0 {
		t.Errorf("%d requests other than GETs reached the API", f.writes.Load())
	}

	// Another adapter started from the same (now spent) refresh token:
	// without a store, Xero refuses it — permanent, quoting nothing.
	_, err := build(true).Lookup(t.Context(), query)
	if class, _ := providers.Classify(err); class != providers.ClassPermanent || reused.Load() != 1 {
		t.Errorf("a spent refresh token: %v (%s); want permanent", err, class)
	}
	for _, secret := range []string{"rt-0", "rt-1", "app-secret", "expired-access"} {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error quotes a credential: %v", err)
		}
	}
	// Without the refresh keys a 401 is permanent, and nothing is posted.
	before := posts.Load()
	_, err = build(false).Lookup(t.Context(), query)
	if class, _ := providers.Classify(err); class != providers.ClassPermanent || posts.Load() != before {
		t.Errorf("no refresh keys: %v (%s); want permanent, no refresh", err, class)
	}
}

// TestRefreshKeysAllOrNone: the refresh keys are set together.
func TestRefreshKeysAllOrNone(t *testing.T) {
	t.Parallel()
	cfg := xero.Kind.NewSettings().(*xero.Config)
	cfg.AccessTokenEnv, cfg.TenantID, cfg.RefreshTokenEnv = "XERO_TOKEN", tenant, "XERO_REFRESH"
	errs := cfg.Validate()
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "refresh_token_env: ") {
		t.Errorf("Validate = %v; want one error naming refresh_token_env", errs)
	}
}
