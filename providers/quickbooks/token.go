package quickbooks

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/sweeper/sweeper/providers"
)

// tokens holds the access token and, when refresh is configured, the
// refresh token and the app's client id and secret. Intuit rotates refresh
// tokens: with a store (providers.Env.Tokens: sweeper.provider_tokens) the
// newest is kept there, shared by the replicas and across restarts, and
// refresh_token_env gives only the first; without one, in memory only.
type tokens struct {
	name   string
	url    string
	client *http.Client // nil: no refresh

	clientID, clientSecret string

	// store, when set, keeps the tokens under key; seed are the ones the
	// configuration gave.
	store providers.TokenStore
	key   string
	seed  providers.Tokens

	mu      sync.Mutex
	access  string
	refresh string
	seen    []string // every token held, for redaction
}

// current returns the access token.
func (t *tokens) current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.access
}

// secrets returns every credential held or once held, for redaction.
func (t *tokens) secrets() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string{t.clientSecret, t.refresh}, t.seen...)
}

// renew returns a new access token after the API refused stale: one
// already fetched since (by this process, or with a store by another
// replica or an earlier run), or one fetched now with the refresh token
// grant. A refusal by the token endpoint (400, 401, 403) is permanent; 429
// rate limited; 5xx and failed requests transient. No error quotes a
// token.
func (t *tokens) renew(ctx context.Context, stale string) (string, error) {
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

// refreshWith spends refreshToken at the token endpoint (the refresh
// token grant) and returns the tokens it answers with.
func (t *tokens) refreshWith(ctx context.Context, refreshToken string) (providers.Tokens, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, strings.NewReader(form.Encode()))
	if err != nil {
		return providers.Tokens{}, providers.Permanent(fmt.Errorf("%s: build token request: %w", t.name, err))
	}
	req.SetBasicAuth(t.clientID, t.clientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	answer := providers.HTTPAnswer{Name: t.name + ": token", MaxBody: 64 << 10, Detail: oauthError}
	_, body, err := answer.Fetch(ctx, t.client.Transport, req)
	if err != nil {
		if class, _ := providers.Classify(err); class == providers.ClassPermanent {
			return providers.Tokens{}, fmt.Errorf("%w (the refresh token or the app is refused: check refresh_token_env, client_id_env, client_secret_env)", err)
		}
		return providers.Tokens{}, err
	}
	var tok struct {
		AccessToken      string `json:"access_token"`
		RefreshToken     string `json:"refresh_token"`
		TokenType        string `json:"token_type"`
		ExpiresIn        *int64 `json:"expires_in"`
		RefreshExpiresIn *int64 `json:"x_refresh_token_expires_in"`
		IDToken          string `json:"id_token"`
	}
	if err := providers.DecodeJSON(body, &tok); err != nil || tok.AccessToken == "" || tok.RefreshToken == "" || !strings.EqualFold(tok.TokenType, "bearer") {
		return providers.Tokens{}, providers.Malformed(fmt.Errorf("%s: token: malformed answer: no bearer access_token and refresh_token", t.name))
	}
	return providers.Tokens{Access: tok.AccessToken, Refresh: tok.RefreshToken}, nil
}

// oauthError names the OAuth error code ("invalid_grant") of a token
// endpoint's error body, and nothing else of it.
func oauthError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if providers.DecodeJSON(body, &e) != nil || word(e.Error) == "-" {
		return ""
	}
	return " (" + e.Error + ")"
}
