package gcal_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// tokenAndAPI serves the token exchange and answers the API with api.
func tokenAndAPI(t *testing.T, api http.HandlerFunc) *httptest.Server {
	t.Helper()
	c := &calendar{t: t, revoked: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			c.token(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		api(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTokenKept: a token valid for an hour serves every lookup; one
// expiring within the minute kept in hand is fetched anew each time.
func TestTokenKept(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expiresIn int
		want      int64
	}{{3599, 1}, {30, 3}} {
		c, srv := newCalendar(t)
		c.expiresIn = tc.expiresIn
		a := adapter(t, srv)
		for range 3 {
			if _, err := a.Lookup(context.Background(), query("op-1")); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.tokenPosts.Load(); got != tc.want {
			t.Errorf("expires_in %d: %d token exchanges for 3 lookups; want %d", tc.expiresIn, got, tc.want)
		}
	}
}

// TestTokenRefreshOn401: a token the API refuses is dropped and one new
// token fetched, then the request retried; a second 401 is permanent.
func TestTokenRefreshOn401(t *testing.T) {
	t.Parallel()
	c, srv := newCalendar(t, ev{ID: "evt00001", OpKey: "op-1", Summary: "s", Created: t0})
	a := adapter(t, srv)
	if _, err := a.Lookup(context.Background(), query("op-1")); err != nil {
		t.Fatal(err)
	}
	c.revokeAll()
	records, err := a.Lookup(context.Background(), query("op-1"))
	if err != nil || len(records) != 1 || c.tokenPosts.Load() != 2 {
		t.Fatalf("after revocation: %+v, %v, %d exchanges; want the record after one new token", records, err, c.tokenPosts.Load())
	}

	srv401 := tokenAndAPI(t, func(w http.ResponseWriter, _ *http.Request) { googleErr(w, http.StatusUnauthorized, "authError") })
	_, err = adapter(t, srv401).Lookup(context.Background(), query("op-1"))
	if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent || !strings.Contains(err.Error(), "new access token") {
		t.Errorf("always 401: %v (%s); want permanent after one refresh", err, class)
	}
}

// TestTokenEndpointErrors: a refused key is a permanent misconfiguration
// naming credentials_env, never the key; 429 is rate limited; 5xx transient.
func TestTokenEndpointErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   providers.Class
	}{{400, providers.ClassPermanent}, {401, providers.ClassPermanent}, {403, providers.ClassPermanent},
		{429, providers.ClassRateLimited}, {503, providers.ClassTransient}} {
		c, srv := newCalendar(t)
		c.tokenFail = tc.status
		_, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
		if class, _ := providers.Classify(err); err == nil || class != tc.want {
			t.Errorf("token endpoint %d: %v (%s); want %s", tc.status, err, class, tc.want)
		}
		if tc.want == providers.ClassPermanent && (!strings.Contains(err.Error(), "credentials_env") || !strings.Contains(err.Error(), "invalid_grant")) {
			t.Errorf("token endpoint %d: %v; want credentials_env and invalid_grant named", tc.status, err)
		}
		if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "Invalid JWT") {
			t.Errorf("error quotes the key or the answer: %v", err)
		}
		if c.gets.Load() != 0 {
			t.Errorf("token endpoint %d: the API was asked without a token", tc.status)
		}
	}
}

// TestTokenMalformed: a token answer without a bearer token and its
// lifetime is malformed.
func TestTokenMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"access_token":"x","token_type":"Bearer"}`, `{"access_token":"","expires_in":3599,"token_type":"Bearer"}`,
		`{"access_token":"x","expires_in":3599,"token_type":"Bearer","access_token":"y"}`, `{"access_token":"x","expires_in":3599,"token_type":"mac"}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) })) //nolint:errcheck // the test reads what arrives
		_, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%s: %v; want malformed", body, err)
		}
	}
}

// TestRateLimit403: Google Calendar says "rate limited" with 403 and a
// usageLimits reason as well as 429: rate limited, Retry-After's delay or
// a minute (its quotas are per minute); another 403 stays permanent.
func TestRateLimit403(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason, retryAfter string
		want               providers.Class
		delay              time.Duration
	}{
		{"userRateLimitExceeded", "", providers.ClassRateLimited, time.Minute},
		{"rateLimitExceeded", "12", providers.ClassRateLimited, 12 * time.Second},
		{"quotaExceeded", "", providers.ClassRateLimited, time.Minute},
		{"forbiddenForServiceAccounts", "", providers.ClassPermanent, 0},
		{"forbidden", "", providers.ClassPermanent, 0},
	} {
		srv := tokenAndAPI(t, func(w http.ResponseWriter, _ *http.Request) {
			if tc.retryAfter != "" {
				w.Header().Set("Retry-After", tc.retryAfter)
			}
			googleErr(w, http.StatusForbidden, tc.reason)
		})
		_, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
		if class, delay := providers.Classify(err); class != tc.want || delay != tc.delay {
			t.Errorf("403 %s: %s %s (%v); want %s %s", tc.reason, class, delay, err, tc.want, tc.delay)
		}
	}
}
