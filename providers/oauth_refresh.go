package providers

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/sweeper/sweeper/config"
)

// RefreshKeys are the keys of a block whose access token is renewed with
// OAuth's refresh token grant when the provider refuses it (Xero,
// QuickBooks Online): refresh_token_env, client_id_env and
// client_secret_env, all three or none, and token_url.
type RefreshKeys struct {
	RefreshTokenEnv, ClientIDEnv, ClientSecretEnv string
	// TokenURL is the token endpoint; DefaultURL stands for an empty one.
	TokenURL, DefaultURL string
	// StoreKey returns the key the tokens are kept under in the token
	// store, from the app's client id: one key per connection, whichever
	// blocks share it.
	StoreKey func(clientID string) string
}

// RefreshingToken is an adapter's access token and, when its block
// configures refresh, the refresh token and the app's client id and
// secret. Providers rotate refresh tokens (Xero on every use, Intuit
// periodically) and refuse a spent one: with a store (Env.Tokens:
// sweeper.provider_tokens) the newest is kept there, shared by the
// replicas and across restarts, and refresh_token_env gives only the
// first; without one, in memory only.
type RefreshingToken struct {
	name   string
	url    string
	client *http.Client // nil: no refresh

	clientID, clientSecret string

	// store, when set, keeps the tokens under key; seed are the ones the
	// configuration gave.
	store TokenStore
	key   string
	seed  Tokens

	mu      sync.Mutex
	access  string
	refresh string
	seen    []string // every token held, for redaction
}

// NewRefreshingToken returns the access token of the block named name,
// renewed as keys say when any of them is set. Credentials are read from
// the environment variables the keys name; the token request is sent only
// to the token URL, never following a redirect.
func NewRefreshingToken(name, access string, keys RefreshKeys, env Env) (*RefreshingToken, error) {
	t := &RefreshingToken{name: name, access: access, seen: []string{access}}
	if keys.RefreshTokenEnv == "" && keys.ClientIDEnv == "" && keys.ClientSecretEnv == "" {
		return t, nil
	}
	var err error
	if t.refresh, err = config.BlockSecret(env.Var, "refresh_token_env", keys.RefreshTokenEnv); err != nil {
		return nil, err
	}
	if t.clientID, err = config.BlockSecret(env.Var, "client_id_env", keys.ClientIDEnv); err != nil {
		return nil, err
	}
	if t.clientSecret, err = config.BlockSecret(env.Var, "client_secret_env", keys.ClientSecretEnv); err != nil {
		return nil, err
	}
	t.url = cmp.Or(keys.TokenURL, keys.DefaultURL)
	if err := CheckBaseURL(t.url, "client_secret_env"); err != nil {
		return nil, fmt.Errorf("token_url: %w", err)
	}
	t.client = &http.Client{
		Transport:     TokenTransport{URL: t.url, Base: env.RoundTripper()},
		CheckRedirect: RefuseRedirects("token_url"),
	}
	t.store, t.key, t.seed = env.Tokens, keys.StoreKey(t.clientID), Tokens{Access: access, Refresh: t.refresh}
	return t, nil
}

// Refreshes reports whether the block configures refresh.
func (t *RefreshingToken) Refreshes() bool { return t.client != nil }

// Renewals is how many times one request's refused access token may be
// renewed: twice with a store — one stored by another replica or an
// earlier run may have expired since, then one refreshed now — else once.
func (t *RefreshingToken) Renewals() int {
	if t.store != nil {
		return 2
	}
	return 1
}

// Close releases the token client's idle connections.
func (t *RefreshingToken) Close() {
	if t.client != nil {
		t.client.CloseIdleConnections()
	}
}

// Current returns the access token.
func (t *RefreshingToken) Current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.access
}

// Secrets returns every credential held or once held, for redaction.
func (t *RefreshingToken) Secrets() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string{t.clientSecret, t.refresh}, t.seen...)
}

// Renew returns a new access token after the API refused stale: one
// already fetched since (by this process, or with a store by another
// replica or an earlier run), or one fetched now with the refresh token
// grant. A refusal by the token endpoint (400, 401, 403) is permanent; 429
// rate limited; 5xx and failed requests transient. No error quotes a
// token.
func (t *RefreshingToken) Renew(ctx context.Context, stale string) (string, error) {
	if t.store != nil {
		fresh, err := t.store.Renew(ctx, t.key, t.seed, stale, t.refreshWith)
		if err != nil {
			return "", err
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.access, t.refresh = fresh.Access, fresh.Refresh
		t.seen = append(t.seen, fresh.Access, fresh.Refresh)
		return t.access, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.access != stale {
		return t.access, nil
	}
	fresh, err := t.refreshWith(ctx, t.refresh)
	if err != nil {
		return "", err
	}
	t.access, t.refresh = fresh.Access, fresh.Refresh
	t.seen = append(t.seen, fresh.Access, fresh.Refresh)
	return t.access, nil
}

// refreshWith spends refreshToken at the token endpoint (the refresh token
// grant, the app's credentials in Basic auth) and returns the tokens it
// answers with.
func (t *RefreshingToken) refreshWith(ctx context.Context, refreshToken string) (Tokens, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, strings.NewReader(form.Encode()))
	if err != nil {
		return Tokens{}, Permanent(fmt.Errorf("%s: build token request: %w", t.name, err))
	}
	req.SetBasicAuth(t.clientID, t.clientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	answer := HTTPAnswer{Name: t.name + ": token", MaxBody: 64 << 10, Detail: oauthError}
	_, body, err := answer.Fetch(ctx, t.client.Transport, req)
	if err != nil {
		if class, _ := Classify(err); class == ClassPermanent {
			return Tokens{}, fmt.Errorf("%w (the refresh token or the app is refused: check refresh_token_env, client_id_env, client_secret_env)", err)
		}
		return Tokens{}, err
	}
	// The token response of RFC 6749 §5.1 with what Xero (id_token,
	// scope) and Intuit (x_refresh_token_expires_in) add.
	var tok struct {
		AccessToken      string `json:"access_token"`
		RefreshToken     string `json:"refresh_token"`
		TokenType        string `json:"token_type"`
		ExpiresIn        *int64 `json:"expires_in"`
		RefreshExpiresIn *int64 `json:"x_refresh_token_expires_in"`
		IDToken          string `json:"id_token"`
		Scope            string `json:"scope"`
	}
	if err := DecodeJSON(body, &tok); err != nil || tok.AccessToken == "" || tok.RefreshToken == "" || !strings.EqualFold(tok.TokenType, "bearer") {
		return Tokens{}, Malformed(fmt.Errorf("%s: token: malformed answer: no bearer access_token and refresh_token", t.name))
	}
	return Tokens{Access: tok.AccessToken, Refresh: tok.RefreshToken}, nil
}

// oauthError names the OAuth error code ("invalid_grant") of a token
// endpoint's error body, and nothing else of it.
func oauthError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if DecodeJSON(body, &e) != nil || e.Error == "" || len(e.Error) > 40 || strings.ContainsFunc(e.Error, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return ""
	}
	return " (" + e.Error + ")"
}
