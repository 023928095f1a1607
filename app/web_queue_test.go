package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify/silence"
)

// TestReviewPageMarksSilencedTickets: on the daemon's review page, a
// ticket whose notifications an active silence holds — matched by the
// outbox's own rule — is marked with that silence, and is not once the
// silence has been expired.
func TestReviewPageMarksSilencedTickets(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	ctx := context.Background()
	b.claim(t, "silenced-in-queue", "sim", time.Hour)
	if _, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvWebCookieKey: strings.Repeat("c", 32)}
	b.sweeper.Getenv = func(k string) string { return env[k] }
	b.sweeper.Config.Web.Enabled = true
	b.sweeper.Config.Web.TrustedProxies = []string{"127.0.0.1/32"}
	b.sweeper.Config.Web.Users = map[string]string{"lead@example.com": "U0LEAD1"}
	b.sweeper.Config.Slack.Reviewers = []string{"U0LEAD1"}
	page, err := b.sweeper.ReviewPage()
	if err != nil {
		t.Fatal(err)
	}
	lead := &pageClient{t: t, page: page, email: "lead@example.com"}
	if code, body := lead.do(http.MethodGet, "/review/", nil); code != http.StatusOK || !strings.Contains(body, "silenced-in-queue") ||
		strings.Contains(body, "silenced by") {
		t.Fatalf("before any silence: %d\n%s", code, body)
	}
	messages := silence.NewStore(b.pool)
	m, err := silence.ParseMatcher("workflow=~.+")
	if err != nil {
		t.Fatal(err)
	}
	si, err := messages.Add(ctx, silence.NewSilence{Matchers: []silence.Matcher{m}, EndsAt: time.Now().Add(time.Hour),
		CreatedBy: "U0LEAD1", Comment: "migration"})
	if err != nil {
		t.Fatal(err)
	}
	if _, body := lead.do(http.MethodGet, "/review/", nil); !strings.Contains(body, fmt.Sprintf("silenced by #%d", si.ID)) {
		t.Errorf("the silenced ticket is not marked:\n%s", body)
	}
	if _, err := messages.Expire(ctx, si.ID, "U0LEAD1"); err != nil {
		t.Fatal(err)
	}
	if _, body := lead.do(http.MethodGet, "/review/", nil); strings.Contains(body, "silenced by") {
		t.Errorf("a ticket is marked after its silence ended:\n%s", body)
	}
}
