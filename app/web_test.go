package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestReviewPageOnTheReviewersListener: with web.enabled the review page
// is served under /review/ on the admin listener when http.admin_listen is
// set — never on the one facing Slack — and on http.listen otherwise; its
// session cookie is Secure unless the listener is plain loopback and the
// page is reached over plain HTTP: behind a trusted TLS proxy (docs/review-page.md) on
// loopback (X-Forwarded-Proto: https), or with an https web.public_url,
// it is Secure.
func TestReviewPageOnTheReviewersListener(t *testing.T) {
	t.Parallel()
	url := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, url)
	env := map[string]string{config.EnvWebCookieKey: strings.Repeat("c", 32)}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		desc, http string
		web, proto string
		onAdmin    bool
		secure     bool
	}{
		{desc: "one loopback listener", http: "listen = \"127.0.0.1:8080\"\n", secure: false},
		{desc: "one loopback listener behind a TLS proxy", http: "listen = \"127.0.0.1:8080\"\n", proto: "https", secure: true},
		{desc: "one loopback listener, public_url https", http: "listen = \"127.0.0.1:8080\"\n",
			web: "public_url = \"https://sweeper.example.com\"\n", secure: true},
		{desc: "an admin listener", http: "listen = \"0.0.0.0:8080\"\nadmin_listen = \"10.0.0.5:9090\"\n", onAdmin: true, secure: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg, err := config.Parse(baseConfig+"\n[http]\n"+tc.http+`
[web]
enabled = true
trusted_proxies = ["192.0.2.0/24"]
`+tc.web+`[web.users]
"anna@example.com" = "U0ANNA1"
`, kinds, getenv)
			if err != nil {
				t.Fatal(err)
			}
			s := &app.App{Config: cfg, Pool: pool, Logger: slog.New(slog.DiscardHandler), Getenv: getenv}
			servers, err := s.NewHTTPServers(context.Background(), nil, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			get := func(srv *http.Server) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodGet, "/review/", nil)
				r.RemoteAddr = "192.0.2.10:4000"
				r.Header.Set("X-Forwarded-Email", "anna@example.com")
				if tc.proto != "" {
					r.Header.Set("X-Forwarded-Proto", tc.proto)
				}
				w := httptest.NewRecorder()
				srv.Handler.ServeHTTP(w, r)
				return w
			}
			page := servers.Public
			if tc.onAdmin {
				page = servers.Admin
				if w := get(servers.Public); w.Code != http.StatusNotFound {
					t.Errorf("the listener facing Slack serves /review/: %d", w.Code)
				}
			}
			w := get(page)
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "signed in as <code>U0ANNA1") {
				t.Fatalf("/review/: %d\n%.300s", w.Code, w.Body.String())
			}
			cookies := w.Result().Cookies()
			if len(cookies) != 1 || cookies[0].Secure != tc.secure {
				t.Errorf("cookies = %+v, want one, Secure %v", cookies, tc.secure)
			}
		})
	}
}

func TestReviewPageOffByDefault(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse(baseConfig, kinds, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Web.Enabled {
		t.Fatal("web.enabled is on by default")
	}
	if _, err := (&app.App{Config: cfg}).ReviewPage(); err != app.ErrWebOff {
		t.Errorf("ReviewPage with web off: %v, want ErrWebOff", err)
	}
}

func TestPlainLoopback(t *testing.T) {
	t.Parallel()
	for listen, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.5:9090": false, "review.example.com:443": false,
	} {
		if got := app.PlainLoopback(listen); got != want {
			t.Errorf("PlainLoopback(%q) = %v, want %v", listen, got, want)
		}
	}
}

// TestReviewPageSignsInWithSlack: with web.auth = "slack" the page sends
// a stranger to Slack's sign-in, whatever proxy header they carry.
func TestReviewPageSignsInWithSlack(t *testing.T) {
	t.Parallel()
	env := map[string]string{config.EnvWebCookieKey: strings.Repeat("c", 32), config.EnvSlackClientSecret: "client-secret"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Parse(baseConfig+`
[slack]
team_id = "T0SWEEPER"
[web]
enabled = true
auth = "slack"
slack_client_id = "123.456"
public_url = "https://sweeper.example.com"
[web.users]
"anna@example.com" = "U0ANNA1"
`, kinds, getenv)
	if err != nil {
		t.Fatal(err)
	}
	page, err := (&app.App{Config: cfg, Logger: slog.New(slog.DiscardHandler), Getenv: getenv}).ReviewPage()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/review/", nil)
	r.Header.Set("X-Forwarded-Email", "anna@example.com")
	w := httptest.NewRecorder()
	page.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/review/signin" {
		t.Errorf("/review/ not signed in: %d to %q, want 303 to /review/signin", w.Code, w.Header().Get("Location"))
	}
}

// TestReviewPageLinksTheSlackMessage: a ticket whose alert the outbox
// delivered links to its message in Slack; the ledger row's recipient is
// masked on the page.
func TestReviewPageLinksTheSlackMessage(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	ctx := context.Background()
	b.claim(t, "many-web-link", "sim", time.Hour)
	if _, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil {
		t.Fatal(err)
	}
	tk, _ := b.ticketOf(t, "many-web-link")
	messages := outbox.NewStore(b.pool)
	rows, err := messages.Claim(ctx, "test", time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rows {
		if n.TicketID == tk.ID && n.Kind == review.EventOpened {
			if err := messages.MarkSent(ctx, n, "C0REVIEW", "1700000000.000100"); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := map[string]string{config.EnvWebCookieKey: strings.Repeat("c", 32)}
	b.sweeper.Getenv = func(k string) string { return env[k] }
	b.sweeper.Config.Web.Enabled = true
	b.sweeper.Config.Web.TrustedProxies = []string{"127.0.0.1/32"}
	b.sweeper.Config.Web.Users = map[string]string{"billing@example.com": tk.Owner}
	page, err := b.sweeper.ReviewPage()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/review/tickets/%d", tk.ID), nil)
	r.RemoteAddr = "127.0.0.1:50000"
	r.Header.Set("X-Forwarded-Email", "billing@example.com")
	w := httptest.NewRecorder()
	page.ServeHTTP(w, r)
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, `href="https://slack.com/archives/C0REVIEW/p1700000000000100"`) {
		t.Errorf("ticket page: %d, want a link to its Slack message\n%.600s", w.Code, body)
	}
	if strings.Contains(body, "jane.doe") {
		t.Errorf("the ticket page shows the raw recipient")
	}
}

// TestReviewPageListsAnAlertGroup: the queue's group filter (the number an
// alert group's Slack message gives) lists the tickets the outbox holds in
// that group, and refuses a group that does not exist.
func TestReviewPageListsAnAlertGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	ctx := context.Background()
	for _, k := range []string{"many-web-g1", "many-web-g2", "many-web-out"} {
		b.claim(t, k, "sim", time.Hour)
	}
	if _, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil {
		t.Fatal(err)
	}
	in1, _ := b.ticketOf(t, "many-web-g1")
	in2, _ := b.ticketOf(t, "many-web-g2")
	out, _ := b.ticketOf(t, "many-web-out")
	var group int64
	if err := b.pool.QueryRow(ctx, `WITH g AS (INSERT INTO sweeper.alert_groups (channel, provider, reason) VALUES ('C1', 'sim', 'multiple_matches') RETURNING id),
		m AS (UPDATE sweeper.outbox SET group_id = (SELECT id FROM g) WHERE ticket_id = ANY($1) AND kind = 'opened')
		SELECT id FROM g`, []int64{in1.ID, in2.ID}).Scan(&group); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvWebCookieKey: strings.Repeat("c", 32)}
	b.sweeper.Getenv = func(k string) string { return env[k] }
	b.sweeper.Config.Web.Enabled = true
	b.sweeper.Config.Web.TrustedProxies = []string{"127.0.0.1/32"}
	b.sweeper.Config.Web.Users = map[string]string{"billing@example.com": in1.Owner}
	page, err := b.sweeper.ReviewPage()
	if err != nil {
		t.Fatal(err)
	}
	get := func(query string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, "/review/"+query, nil)
		r.RemoteAddr = "127.0.0.1:50000"
		r.Header.Set("X-Forwarded-Email", "billing@example.com")
		w := httptest.NewRecorder()
		page.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	code, body := get(fmt.Sprintf("?group=%d", group))
	for _, tk := range []review.Ticket{in1, in2} {
		if !strings.Contains(body, fmt.Sprintf(`href="/review/tickets/%d"`, tk.ID)) {
			t.Errorf("group %d's page (%d) lacks ticket %d", group, code, tk.ID)
		}
	}
	if strings.Contains(body, fmt.Sprintf(`href="/review/tickets/%d"`, out.ID)) {
		t.Errorf("group %d's page lists ticket %d, not in the group", group, out.ID)
	}
	if code, body := get(fmt.Sprintf("?group=%d", group+1)); code != http.StatusBadRequest || !strings.Contains(body, "group:") {
		t.Errorf("a group that does not exist: %d, want 400 saying group", code)
	}
}
