package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/ledgertables"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

const slackSigning = "slack-resolve-signing-secret"

// slackClick is the form Slack posts when user clicks the button action
// of a ticket message whose value is value, and its headers, signed now
// with secret.
func slackClick(t *testing.T, secret, user, action, value string) (string, http.Header) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": user, "username": "someone", "name": "someone", "team_id": "T0ACME01"},
		"api_app_id": "A0SWEEPER1",
		"team":       map[string]any{"id": "T0ACME01", "domain": "acme"},
		"container":  map[string]any{"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0REVIEW01"},
		"channel":    map[string]any{"id": "C0REVIEW01", "name": "ops-review"},
		"trigger_id": "13345224609.738474920.8088930838d88f008e0",
		"message":    map[string]any{"type": "message", "ts": "1700000000.000100", "text": "Ticket"},
		"actions": []any{map[string]any{
			"type": "button", "action_id": action, "block_id": message.ActionsBlockID, "value": value,
			"text": map[string]any{"type": "plain_text", "text": "Button"}, "action_ts": "1700000001.000200",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := url.Values{"payload": {string(payload)}}.Encode()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return body, h
}

// TestSlackClickResolvesOnEachTable: the "Not sent" button of a ticket
// message, clicked by the ticket's owner, reaches the endpoint sweeper
// serves at /slack/interactions and resolves the ticket: the operation
// moves review → failed in the table the configuration names, in its own
// word for failed, and a second click changes nothing.
func TestSlackClickResolvesOnEachTable(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		fake := slackfake.New(t)
		env := func(name string) string {
			switch name {
			case config.EnvSlackToken:
				return slackfake.Token
			case config.EnvSlackSigning:
				return slackSigning
			}
			return ""
		}
		b := setupOn(t, lt, baseConfig, nil)
		cfg, err := config.Parse(b.cfgText+fmt.Sprintf(`
[slack]
channel = "C0REVIEW01"
team_id = "T0ACME01"
app_id = "A0SWEEPER1"
api_url = %q
`, fake.URL()), kinds, env)
		if err != nil {
			t.Fatal(err)
		}
		b.sweeper.Config, b.sweeper.Getenv = cfg, env
		ctx := context.Background()
		op := b.claim(t, "lost-slack-1", "sim", stale)
		if sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil || sum.Tickets["not_found"] != 1 {
			t.Fatalf("sweep: %+v, %v; want one not_found ticket", sum, err)
		}
		tk, _ := b.ticketOf(t, op.OpKey)
		endpoint, err := b.sweeper.Interactions()
		if err != nil {
			t.Fatal(err)
		}
		click := func() int {
			body, header := slackClick(t, slackSigning, tk.Owner, message.ActionNotSent, message.ButtonValue(tk.ID, tk.Version))
			req := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(body))
			for k, v := range header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			endpoint.ServeHTTP(rec, req)
			return rec.Code
		}
		if code := click(); code != http.StatusOK {
			t.Fatalf("click answered %d, want 200", code)
		}

		got, err := b.sweeper.Reviews().Get(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != review.StateResolved || got.Resolution != review.ResolutionNotSent || got.ResolvedBy != "slack:"+tk.Owner {
			t.Fatalf("ticket after the click: %s %s by %q; want resolved not_sent by slack:%s", got.State, got.Resolution, got.ResolvedBy, tk.Owner)
		}
		if row := b.status(t, op.OpKey); row.Status != ledger.StatusFailed || row.ProviderRecordID != "" {
			t.Errorf("operation is %s %q, want failed", row.Status, row.ProviderRecordID)
		}
		word, _ := b.table.Word(ledger.StatusFailed)
		if n := b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:op_key} = $1 AND {c:status} = $2`), op.OpKey, word); n != 1 {
			t.Errorf("the table does not hold %q for the operation", word)
		}

		// The same click again: the ticket moved on, nothing changes.
		if code := click(); code != http.StatusOK {
			t.Fatalf("second click answered %d, want 200", code)
		}
		if again, err := b.sweeper.Reviews().Get(ctx, tk.ID); err != nil || again.Version != got.Version {
			t.Errorf("a second click changed the ticket: version %d → %d (%v)", got.Version, again.Version, err)
		}
		if n := b.count(t, `SELECT count(*) FROM sweeper.ticket_events WHERE ticket_id = $1 AND kind = 'resolved'`, tk.ID); n != 1 {
			t.Errorf("%d resolved events, want 1", n)
		}
	})
}
