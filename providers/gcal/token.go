package gcal

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sweeper/sweeper/providers"
)

// scope is the one OAuth scope asked for: reading calendars and events.
const scope = "https://www.googleapis.com/auth/calendar.readonly"

// serviceAccountKey is what the adapter reads of a service account's JSON
// key, as the Google Cloud console downloads it.
type serviceAccountKey struct {
	Type         string `json:"type"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
}

// parseKey reads a service account JSON key strictly; its errors never
// quote the key.
func parseKey(raw string) (*serviceAccountKey, *rsa.PrivateKey, error) {
	var k serviceAccountKey
	if err := providers.DecodeJSON([]byte(raw), &k); err != nil {
		return nil, nil, errors.New("not a service account JSON key")
	}
	switch {
	case k.Type != "service_account":
		return nil, nil, errors.New(`not a service account JSON key: "type" is not "service_account"`)
	case k.ClientEmail == "" || k.PrivateKey == "":
		return nil, nil, errors.New("the service account JSON key has no client_email or private_key")
	}
	block, _ := pem.Decode([]byte(k.PrivateKey))
	if block == nil {
		return nil, nil, errors.New("the service account JSON key's private_key is not PEM")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if pk, err1 := x509.ParsePKCS1PrivateKey(block.Bytes); err1 == nil {
			return &k, pk, nil
		}
		return nil, nil, errors.New("the service account JSON key's private_key is not an RSA key")
	}
	pk, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, nil, errors.New("the service account JSON key's private_key is not an RSA key")
	}
	return &k, pk, nil
}

// tokens holds the access token, fetched with the OAuth 2.0 JWT bearer
// grant and kept until a minute before it expires or the API refuses it.
type tokens struct {
	name   string
	key    *serviceAccountKey
	pk     *rsa.PrivateKey
	url    string
	client *http.Client
	now    func() time.Time

	mu     sync.Mutex
	token  string
	expiry time.Time
}

// get returns a valid access token, fetching one when none is held or the
// one held expires within a minute.
func (t *tokens) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Add(time.Minute).Before(t.expiry) {
		return t.token, nil
	}
	token, expiry, err := t.fetch(ctx)
	if err != nil {
		return "", err
	}
	t.token, t.expiry = token, expiry
	return token, nil
}

// drop forgets token, which the API refused, unless another was fetched
// since.
func (t *tokens) drop(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token == token {
		t.token = ""
	}
}

// fetch signs an assertion and exchanges it for an access token. A refusal
// by the token endpoint (400, 401, 403: a revoked or wrong key, a disabled
// account) is permanent — a misconfiguration; 429 is rate limited; 5xx
// and a failed request are transient. No error quotes the key, the
// assertion or the answer's text.
func (t *tokens) fetch(ctx context.Context) (string, time.Time, error) {
	now := t.now()
	assertion := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss":   t.key.ClientEmail,
		"scope": scope,
		"aud":   t.url,
		"iat":   now.Unix(),
		"exp":   now.Add(time.Hour).Unix(),
	})
	if t.key.PrivateKeyID != "" {
		assertion.Header["kid"] = t.key.PrivateKeyID
	}
	signed, err := assertion.SignedString(t.pk)
	if err != nil {
		return "", time.Time{}, providers.Permanent(fmt.Errorf("%s: sign the token request: %w", t.name, err))
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {signed}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, providers.Permanent(fmt.Errorf("%s: build token request: %w", t.name, err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	answer := providers.HTTPAnswer{Name: t.name + ": token", MaxBody: 64 << 10, Detail: oauthError}
	_, body, err := answer.Fetch(ctx, t.client.Transport, req)
	if err != nil {
		if class, _ := providers.Classify(err); class == providers.ClassPermanent {
			return "", time.Time{}, fmt.Errorf("%w (the service account key is refused: check credentials_env)", err)
		}
		return "", time.Time{}, err
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   *int64 `json:"expires_in"`
	}
	if err := providers.DecodeJSON(body, &tok); err != nil || tok.AccessToken == "" || !strings.EqualFold(tok.TokenType, "Bearer") ||
		tok.ExpiresIn == nil || *tok.ExpiresIn <= 0 {
		return "", time.Time{}, providers.Malformed(fmt.Errorf("%s: token: malformed answer: no bearer access_token with a positive expires_in", t.name))
	}
	return tok.AccessToken, now.Add(time.Duration(*tok.ExpiresIn) * time.Second), nil
}

// oauthError names the OAuth error code ("invalid_grant") of a token
// endpoint's error body, and nothing else of it.
func oauthError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if providers.DecodeJSON(body, &e) != nil || providers.Word(e.Error, 40) == "-" {
		return ""
	}
	return " (" + e.Error + ")"
}
