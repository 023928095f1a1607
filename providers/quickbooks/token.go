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
// refresh token and the app's client id and secret. A refresh keeps the
// new tokens in memory only: Intuit rotates refresh tokens, and the one in
// refresh_token_env is read again only at start.
type tokens struct {
	name   string
	url    string
	client *http.Client // nil: no refresh

	clientID, clientSecret string

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
// already fetched since, or one fetched now with the refresh token grant.
// A refusal by the token endpoint (400, 401, 403) is permanent; 429 rate
// limited; 5xx and failed requests transient. No error quotes a token.
func (t *tokens) renew(ctx context.Context, stale string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.access != stale {
		return t.access, nil
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.refresh}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, strings.NewReader(form.Encode()))
	if err != nil {
		return "", providers.Permanent(fmt.Errorf("%s: build token request: %w", t.name, err))
	}
	req.SetBasicAuth(t.clientID, t.clientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	answer := providers.HTTPAnswer{Name: t.name + ": token", MaxBody: 64 << 10, Detail: oauthError}
	_, body, err := answer.Fetch(ctx, t.client.Transport, req)
	if err != nil {
		if class, _ := providers.Classify(err); class == providers.ClassPermanent {
			return "", fmt.Errorf("%w (the refresh token or the app is refused: check refresh_token_env, client_id_env, client_secret_env)", err)
		}
		return "", err
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
		return "", providers.Malformed(fmt.Errorf("%s: token: malformed answer: no bearer access_token and refresh_token", t.name))
	}
	t.access, t.refresh = tok.AccessToken, tok.RefreshToken
	t.seen = append(t.seen, tok.AccessToken, tok.RefreshToken)
	return t.access, nil
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
