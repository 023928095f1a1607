package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// SlackSignIn configures Sign in with Slack (OpenID Connect), in place of
// a proxy.
type SlackSignIn struct {
	// Issuer is the OpenID issuer: https://slack.com.
	Issuer string
	// ClientID and ClientSecret are the Slack app's.
	ClientID, ClientSecret string
	// TeamID is the one workspace whose people may sign in: an id token
	// of another is refused.
	TeamID string
	// RedirectURL is where Slack sends people back: the page's public
	// address and "/review/callback".
	RedirectURL string
	// Members are the Slack user ids allowed in besides [Config.Users]'
	// and [Config.Viewers]: the reviewers and the tickets' owners.
	Members []string
}

// signInCookie holds a sign-in's state and nonce until Slack sends the
// person back.
const signInCookie = "sweeper_review_signin"

// signInWindow is how long a sign-in may take.
const signInWindow = 10 * time.Minute

// slackIDClaims are the id token's claims sweeper reads: the user id and
// team id Slack adds, and the nonce.
type slackIDClaims struct {
	Nonce  string `json:"nonce"`
	UserID string `json:"https://slack.com/user_id"`
	TeamID string `json:"https://slack.com/team_id"`
}

// oidcClient is Sign in with Slack's provider, discovered at the first
// sign-in: the daemon starts whether Slack answers or not.
type oidcClient struct {
	cfg SlackSignIn

	mu       sync.Mutex
	provider *oidc.Provider
}

func (c *oidcClient) discover(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	p, err := oidc.NewProvider(ctx, c.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", c.cfg.Issuer, err)
	}
	c.provider = p
	return p, nil
}

func (c *oidcClient) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: c.cfg.RedirectURL, Scopes: []string{oidc.ScopeOpenID}}
}

// signIn sends the person to Slack with a fresh state and nonce, kept in
// a signed cookie for the way back.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	p, err := h.oidc.discover(r.Context())
	if err != nil {
		h.logger.Error("web: sign in with Slack", "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "Slack's sign-in could not be reached; try again in a moment.")
		return
	}
	state, nonce := randomToken(), randomToken()
	exp := h.now().Add(signInWindow)
	payload := state + "|" + nonce + "|" + strconv.FormatInt(exp.Unix(), 10)
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + h.signInMAC(payload),
		Path: Prefix + "/", Expires: exp, MaxAge: int(signInWindow / time.Second), HttpOnly: true, Secure: h.secureCookie(r),
		SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, h.oidc.oauth(p).AuthCodeURL(state, oidc.Nonce(nonce)), http.StatusFound)
}

func (h *Handler) signInMAC(payload string) string {
	m := hmac.New(sha256.New, h.sessions.key)
	m.Write([]byte("signin\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// errSignIn is a sign-in that did not hold; its message is for the page.
type errSignIn struct{ why string }

func (e *errSignIn) Error() string { return e.why }

// callback finishes a sign-in: the state is the one sent, the code is
// exchanged, the id token verified (signature, issuer, audience, expiry,
// nonce), its team is slack.team_id and its user one sweeper knows; then a
// session starts.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	user, err := h.finishSignIn(r)
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: "", Path: Prefix + "/", MaxAge: -1, HttpOnly: true,
		Secure: h.secureCookie(r), SameSite: http.SameSiteLaxMode})
	if se, ok := errors.AsType[*errSignIn](err); ok {
		h.logger.Warn("web: sign in with Slack refused", "why", se.why)
		h.fail(w, r, http.StatusForbidden, se.why)
		return
	}
	if err != nil {
		h.logger.Error("web: sign in with Slack", "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "Slack's sign-in did not complete; try again.")
		return
	}
	h.sessions.issue(w, user, h.now(), h.secureCookie(r))
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

func (h *Handler) finishSignIn(r *http.Request) (string, error) {
	c, err := r.Cookie(signInCookie)
	if err != nil {
		return "", &errSignIn{"This sign-in was not started here, or took too long: sign in again."}
	}
	enc, mac, _ := strings.Cut(c.Value, ".")
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !hmac.Equal([]byte(mac), []byte(h.signInMAC(string(raw)))) {
		return "", &errSignIn{"This sign-in was not started here: sign in again."}
	}
	parts := strings.Split(string(raw), "|")
	exp, _ := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if len(parts) != 3 || !h.now().Before(time.Unix(exp, 0)) {
		return "", &errSignIn{"This sign-in took too long: sign in again."}
	}
	state, nonce := parts[0], parts[1]
	q := r.URL.Query()
	if q.Get("error") != "" {
		return "", &errSignIn{"Slack did not sign you in; nothing was shared."}
	}
	if q.Get("state") == "" || !hmac.Equal([]byte(q.Get("state")), []byte(state)) {
		return "", &errSignIn{"This sign-in's answer does not match the request: sign in again."}
	}
	p, err := h.oidc.discover(r.Context())
	if err != nil {
		return "", err
	}
	tok, err := h.oidc.oauth(p).Exchange(r.Context(), q.Get("code"))
	if err != nil {
		return "", fmt.Errorf("exchange the code: %w", err)
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return "", &errSignIn{"Slack's answer carries no identity: sign in again."}
	}
	idToken, err := p.Verifier(&oidc.Config{ClientID: h.oidc.cfg.ClientID, Now: h.now}).Verify(r.Context(), rawID)
	if err != nil {
		return "", &errSignIn{"Slack's identity token did not verify: sign in again."}
	}
	var claims slackIDClaims
	if err := idToken.Claims(&claims); err != nil {
		return "", &errSignIn{"Slack's identity token could not be read: sign in again."}
	}
	switch {
	case !hmac.Equal([]byte(claims.Nonce), []byte(nonce)):
		return "", &errSignIn{"This sign-in's identity token was issued for another request: sign in again."}
	case claims.TeamID != h.oidc.cfg.TeamID:
		return "", &errSignIn{"You signed in to another Slack workspace than this sweeper's: nothing is shown."}
	case claims.UserID == "" || !h.mapped[claims.UserID]:
		return "", &errSignIn{"You are not allowed to see this page: ask to be added to web.users or web.viewers."}
	}
	return claims.UserID, nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
