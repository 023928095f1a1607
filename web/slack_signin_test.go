package web_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/web"
)

const teamID = "T0SWEEPER"

// slackUser is a person as Slack's OpenID provider describes them: its id
// token carries Slack's user and team ids.
type slackUser struct{ id, team string }

func (u slackUser) ID() string { return u.id }

func (u slackUser) Userinfo([]string) ([]byte, error) {
	return json.Marshal(map[string]string{"sub": u.id})
}

func (u slackUser) Claims(_ []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	return slackClaims{IDTokenClaims: base, UserID: u.id, TeamID: u.team}, nil
}

type slackClaims struct {
	*mockoidc.IDTokenClaims
	UserID string `json:"https://slack.com/user_id"`
	TeamID string `json:"https://slack.com/team_id"`
}

// slackSetup is the review page signing people in with a fake Slack.
func slackSetup(t *testing.T, edits ...func(*web.Config)) (*web.Handler, *mockoidc.MockOIDC) {
	t.Helper()
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	cfg := m.Config()
	tx := dbtest.Tx(t)
	wc := web.Config{
		Store:     review.NewStore(tx, ledger.Native(), policy),
		Reader:    review.NewReader(tx, ledger.Native()),
		Deciders:  review.NewDeciders([]string{lead}),
		Viewers:   []string{vera},
		CookieKey: []byte(strings.Repeat("s", 32)),
		Slack: &web.SlackSignIn{Issuer: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TeamID: teamID,
			RedirectURL: "https://review.example.com/review/callback", Members: []string{anna, lead}},
		Logger: slog.New(slog.DiscardHandler),
		Now:    time.Now,
	}
	for _, edit := range edits {
		edit(&wc)
	}
	h, err := web.New(wc)
	if err != nil {
		t.Fatal(err)
	}
	return h, m
}

// signInWithSlack walks a browser through Sign in with Slack as user and
// returns the callback's answer and the cookies the browser holds.
func signInWithSlack(t *testing.T, h *web.Handler, m *mockoidc.MockOIDC, user slackUser, tamper func(q url.Values)) (*httptest.ResponseRecorder, []*http.Cookie) {
	t.Helper()
	serve := func(target string, cookies []*http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		for _, c := range cookies {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// Not signed in: to the sign-in, which sends the browser to Slack.
	w := serve("https://review.example.com/review/", nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/review/signin" {
		t.Fatalf("not signed in: %d to %q, want 303 to /review/signin", w.Code, w.Header().Get("Location"))
	}
	w = serve("https://review.example.com/review/signin", nil)
	authorize := w.Header().Get("Location")
	if w.Code != http.StatusFound || !strings.HasPrefix(authorize, m.AuthorizationEndpoint()) {
		t.Fatalf("sign-in: %d to %q, want the issuer's authorization endpoint", w.Code, authorize)
	}
	cookies := w.Result().Cookies()
	m.QueueUser(user)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(authorize)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Path != "/review/callback" {
		t.Fatalf("the issuer sent the browser to %q", resp.Header.Get("Location"))
	}
	q := back.Query()
	if tamper != nil {
		tamper(q)
	}
	w = serve("https://review.example.com/review/callback?"+q.Encode(), cookies)
	return w, append(cookies, w.Result().Cookies()...)
}

func TestSignInWithSlack(t *testing.T) {
	t.Parallel()
	h, m := slackSetup(t)
	w, cookies := signInWithSlack(t, h, m, slackUser{id: anna, team: teamID}, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/review/" {
		t.Fatalf("callback: %d to %q\n%s", w.Code, w.Header().Get("Location"), w.Body.String())
	}
	var session *http.Cookie
	for _, c := range cookies {
		if c.Name == "sweeper_review" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || !session.Secure {
		t.Fatalf("no HttpOnly, Secure session cookie after signing in: %+v", cookies)
	}
	r := httptest.NewRequest(http.MethodGet, "https://review.example.com/review/", nil)
	r.AddCookie(session)
	// A proxy header means nothing when people sign in with Slack.
	r.Header.Set("X-Forwarded-Email", "lead@example.com")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "signed in as <code>"+anna) {
		t.Errorf("signed in: %d\n%.400s", rec.Code, rec.Body.String())
	}
}

func TestSignInWithSlackRefused(t *testing.T) {
	t.Parallel()
	h, m := slackSetup(t)
	for _, tc := range []struct {
		desc   string
		user   slackUser
		tamper func(q url.Values)
		want   string
	}{
		{desc: "a token from another team", user: slackUser{id: anna, team: "T0OTHER"}, want: "another Slack workspace"},
		{desc: "a person sweeper does not know", user: slackUser{id: "U0STRANGER", team: teamID}, want: "not allowed"},
		{desc: "a forged state", user: slackUser{id: anna, team: teamID}, tamper: func(q url.Values) { q.Set("state", "forged") },
			want: "does not match"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			w, cookies := signInWithSlack(t, h, m, tc.user, tc.tamper)
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("callback: %d, want 403 saying %q\n%.400s", w.Code, tc.want, w.Body.String())
			}
			for _, c := range cookies {
				if c.Name == "sweeper_review" {
					t.Errorf("a refused sign-in started a session")
				}
			}
		})
	}
}
