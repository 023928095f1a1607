package interact

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

const (
	interactTestSecret   = "8f742231b10e8888abcd99yyyzzz85a5"
	interactTestToken    = "xoxb-interact-test"
	interactTestTeam     = "T0ACME01"
	interactTestApp      = "A0SWEEPER1"
	interactTestOwner    = "U0OWNER01"
	interactTestReviewer = "U0REVIEW01"
	interactTestStranger = "U0STRANGE1"
	interactTestChannel  = "C0REVIEW01"
	interactTestTrigger  = "13345224609.738474920.8088930838d88f008e0"
)

var interactTestPolicy = review.Policy{DefaultOwner: interactTestOwner, Window: time.Hour, Priority: "normal"}

// interactSlackAPI is an httptest fake of the Slack Web API methods the
// endpoint calls, shaped like Slack's: chat.postEphemeral takes a form,
// views.open JSON, both need the bot token, and every answer is 200 with
// {"ok": ...}.
type interactSlackAPI struct {
	srv *httptest.Server
	// hold, when set, keeps chat.postEphemeral from answering until it is
	// closed.
	hold     chan struct{}
	holdOnce sync.Once

	mu         sync.Mutex
	ephemerals []interactEphemeral
	views      []interactViewOpen
}

type interactEphemeral struct {
	Channel, User, Text string
}

// interactViewOpen is what views.open received, in the fields the tests
// look at.
type interactViewOpen struct {
	TriggerID string `json:"trigger_id"`
	View      struct {
		Type            string              `json:"type"`
		CallbackID      string              `json:"callback_id"`
		PrivateMetadata string              `json:"private_metadata"`
		Blocks          []interactViewBlock `json:"blocks"`
	} `json:"view"`
}

type interactViewBlock struct {
	Type     string `json:"type"`
	BlockID  string `json:"block_id"`
	Optional bool   `json:"optional"`
	Element  struct {
		Type      string `json:"type"`
		ActionID  string `json:"action_id"`
		MaxLength int    `json:"max_length"`
	} `json:"element"`
}

func newInteractSlackAPI(t *testing.T, hold bool) *interactSlackAPI {
	t.Helper()
	api := &interactSlackAPI{}
	if hold {
		api.hold = make(chan struct{})
	}
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /chat.postEphemeral", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			answer(w, map[string]any{"ok": false, "error": "invalid_form_data"})
			return
		}
		if r.PostForm.Get("token") != interactTestToken && r.Header.Get("Authorization") != "Bearer "+interactTestToken {
			answer(w, map[string]any{"ok": false, "error": "not_authed"})
			return
		}
		e := interactEphemeral{Channel: r.PostForm.Get("channel"), User: r.PostForm.Get("user"), Text: r.PostForm.Get("text")}
		if e.Channel == "" || e.User == "" || e.Text == "" {
			answer(w, map[string]any{"ok": false, "error": "invalid_arguments"})
			return
		}
		if api.hold != nil {
			select {
			case <-api.hold:
			case <-r.Context().Done():
				return
			}
		}
		api.mu.Lock()
		api.ephemerals = append(api.ephemerals, e)
		api.mu.Unlock()
		answer(w, map[string]any{"ok": true, "message_ts": "1700000000.000200"})
	})
	mux.HandleFunc("POST /views.open", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+interactTestToken {
			answer(w, map[string]any{"ok": false, "error": "not_authed"})
			return
		}
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			answer(w, map[string]any{"ok": false, "error": "invalid_arguments"})
			return
		}
		var v interactViewOpen
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			answer(w, map[string]any{"ok": false, "error": "invalid_json"})
			return
		}
		if v.TriggerID == "" {
			answer(w, map[string]any{"ok": false, "error": "invalid_trigger_id"})
			return
		}
		api.mu.Lock()
		api.views = append(api.views, v)
		api.mu.Unlock()
		answer(w, map[string]any{"ok": true, "view": map[string]any{
			"id": "V0MODAL01", "type": "modal", "callback_id": v.View.CallbackID, "private_metadata": v.View.PrivateMetadata,
		}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		answer(w, map[string]any{"ok": false, "error": "unknown_method"})
	})
	api.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		api.release()
		api.srv.Close()
	})
	return api
}

// release lets held chat.postEphemeral calls answer.
func (api *interactSlackAPI) release() {
	if api.hold != nil {
		api.holdOnce.Do(func() { close(api.hold) })
	}
}

func (api *interactSlackAPI) calls() ([]interactEphemeral, []interactViewOpen) {
	api.mu.Lock()
	defer api.mu.Unlock()
	return append([]interactEphemeral(nil), api.ephemerals...), append([]interactViewOpen(nil), api.views...)
}

// interactBundle is one test's endpoint, store and fake Slack.
type interactBundle struct {
	ctx    context.Context
	db     review.TxBeginner
	store  *review.Store
	ledger *ledger.Store
	api    *interactSlackAPI
	h      *Endpoint
}

type interactOptions struct {
	// pool: use a database of the test's own instead of a rolled-back
	// transaction, for requests served concurrently.
	pool bool
	// holdReplies: the fake holds ephemeral replies until released.
	holdReplies bool
	// config changes the endpoint's configuration.
	config func(*Config)
}

func interactSetup(t *testing.T, opts interactOptions) *interactBundle {
	t.Helper()
	var db review.TxBeginner
	if opts.pool {
		db = dbtest.NewPool(t)
	} else {
		db = dbtest.Tx(t)
	}
	api := newInteractSlackAPI(t, opts.holdReplies)
	store := review.NewStore(db, ledger.Native(), interactTestPolicy)
	cfg := Config{
		SigningSecret: interactTestSecret,
		TeamID:        interactTestTeam,
		AppID:         interactTestApp,
		Reviewers:     []string{interactTestReviewer},
		Resolver:      store,
		DecodeJSON:    providers.DecodeJSON,
		Slack:         slack.New(interactTestToken, slack.OptionAPIURL(api.srv.URL+"/"), slack.OptionHTTPClient(api.srv.Client())),
		Logger:        slog.New(slog.NewTextHandler(t.Output(), nil)),
		Now:           time.Now,
	}
	if opts.config != nil {
		opts.config(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close) // before the fake closes: cleanups run last first
	return &interactBundle{ctx: context.Background(), db: db, store: store, ledger: ledger.NewStore(db, ledger.Native()), api: api, h: h}
}

// openTicket records a pending operation, as a workflow does, and has
// sweeper open a ticket for it, as a lookup that found nothing does.
func (b *interactBundle) openTicket(t *testing.T) review.Ticket {
	t.Helper()
	c, err := b.ledger.Claim(b.ctx, ledger.Attempt{
		OpKey: "interact-" + rand.Text(), Workflow: "onboarding", Provider: "mailer", Action: "send_email",
		Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"template":"welcome"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	op, now := c.Operation, time.Now().UTC()
	d := proof.Decide(op, proof.Answered(proof.SearchFor(op, providers.Matching{ByKey: true}, now), nil))
	ev := proof.NewEvidence(op, proof.LookupReport{Adapter: "sim", Outcome: proof.Answered(providers.Query{}, nil), At: now}, d)
	applied, err := b.store.Apply(b.ctx, op, d, ev, now)
	if err != nil {
		t.Fatal(err)
	}
	if applied.TicketID == 0 {
		t.Fatalf("Apply = %+v, want a ticket", applied)
	}
	return b.ticket(t, applied.TicketID)
}

func (b *interactBundle) ticket(t *testing.T, id int64) review.Ticket {
	t.Helper()
	tk, err := b.store.Get(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func (b *interactBundle) operation(t *testing.T, id int64) ledger.Operation {
	t.Helper()
	op, err := b.ledger.GetByID(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// eventKinds lists a ticket's audit trail by kind.
func (b *interactBundle) eventKinds(t *testing.T, id int64) []string {
	t.Helper()
	evs, err := b.store.Events(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]string, len(evs))
	for i, ev := range evs {
		kinds[i] = ev.Kind
	}
	return kinds
}

// interactSigned signs body as Slack does: v0=HMAC-SHA256("v0:TS:BODY").
func interactSigned(secret string, at time.Time, body string) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// interactForm is the form Slack posts: the payload as JSON in one field.
func interactForm(t *testing.T, payload any) string {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return url.Values{"payload": {string(b)}}.Encode()
}

// interactFormRaw is interactForm with prefix written at the start of the
// payload object, where JSON encoding could not put it (a key twice).
func interactFormRaw(t *testing.T, payload any, prefix string) string {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return url.Values{"payload": {"{" + prefix + string(b[1:])}}.Encode()
}

// serve sends one request to the endpoint and checks it answered within
// Slack's 3 s.
func (b *interactBundle) serve(t *testing.T, method, body string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "/slack/interactions", strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	start := time.Now()
	b.h.ServeHTTP(rec, req)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("answered in %s, past Slack's 3 s", took)
	}
	return rec
}

// post sends body signed now with the right secret.
func (b *interactBundle) post(t *testing.T, body string) *httptest.ResponseRecorder {
	t.Helper()
	return b.serve(t, http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body))
}

// interactClick is a block_actions payload: user clicked the button
// action of a ticket message, carrying value.
func interactClick(user, action, value string) map[string]any {
	return map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": user, "username": "someone", "name": "someone", "team_id": interactTestTeam},
		"api_app_id": interactTestApp,
		"token":      "legacy-verification-token",
		"container": map[string]any{"type": "message", "message_ts": "1700000000.000100",
			"channel_id": interactTestChannel, "is_ephemeral": false},
		"trigger_id":   interactTestTrigger,
		"team":         map[string]any{"id": interactTestTeam, "domain": "acme"},
		"enterprise":   nil,
		"channel":      map[string]any{"id": interactTestChannel, "name": "ops-review"},
		"message":      map[string]any{"type": "message", "ts": "1700000000.000100", "text": "Ticket"},
		"response_url": "https://hooks.slack.com/actions/T0ACME01/1/abc",
		"actions": []any{map[string]any{
			"type": "button", "action_id": action, "block_id": message.ActionsBlockID, "value": value,
			"text": map[string]any{"type": "plain_text", "text": "Button", "emoji": true}, "action_ts": "1700000001.000200",
		}},
		"state": map[string]any{"values": map[string]any{}},
	}
}

// interactSubmission is a view_submission payload of the "Mark done"
// modal carrying metadata, with recordID typed in.
func interactSubmission(user, metadata, recordID string) map[string]any {
	return map[string]any{
		"type":       "view_submission",
		"team":       map[string]any{"id": interactTestTeam, "domain": "acme"},
		"user":       map[string]any{"id": user, "username": "someone", "name": "someone", "team_id": interactTestTeam},
		"api_app_id": interactTestApp,
		"token":      "legacy-verification-token",
		"trigger_id": interactTestTrigger,
		"view": map[string]any{
			"id": "V0MODAL01", "team_id": interactTestTeam, "type": "modal", "callback_id": interactMarkDoneCallback,
			"private_metadata": metadata, "hash": "1700000002.abc", "app_id": interactTestApp,
			"state": map[string]any{"values": map[string]any{
				interactRecordBlock: map[string]any{interactRecordAction: map[string]any{"type": "plain_text_input", "value": recordID}},
			}},
		},
		"response_urls": []any{},
	}
}

// ignoreTimes leaves out the fields the database sets to now().
var ignoreTimes = cmpopts.IgnoreFields(review.Ticket{}, "UpdatedAt", "ResolvedAt", "AcknowledgedAt")

// TestInteractionsRefusesUnverified: a request that is not provably from
// Slack, from the configured team and app, gets 4xx and changes nothing.
func TestInteractionsRefusesUnverified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc   string
		config func(*Config)
		// request builds the request from a valid click's payload.
		request func(t *testing.T, click map[string]any) (method, body string, header http.Header)
		want    int
	}{
		{desc: "wrong secret", want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactForm(t, click)
				return http.MethodPost, body, interactSigned("another-secret", time.Now(), body)
			}},
		{desc: "signature over another body", want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				header := interactSigned(interactTestSecret, time.Now(), interactForm(t, click))
				click["user"] = map[string]any{"id": interactTestOwner}
				return http.MethodPost, interactForm(t, click) + "&x=1", header
			}},
		{desc: "no signature headers", want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				return http.MethodPost, interactForm(t, click), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			}},
		{desc: "no timestamp header", want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactForm(t, click)
				header := interactSigned(interactTestSecret, time.Now(), body)
				header.Del("X-Slack-Request-Timestamp")
				return http.MethodPost, body, header
			}},
		{desc: "signature not v0 hex", want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactForm(t, click)
				header := interactSigned(interactTestSecret, time.Now(), body)
				header.Set("X-Slack-Signature", "v1="+strings.TrimPrefix(header.Get("X-Slack-Signature"), "v0="))
				return http.MethodPost, body, header
			}},
		{desc: "timestamp six minutes old", want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactForm(t, click)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now().Add(-6*time.Minute), body)
			}},
		{desc: "timestamp six minutes ahead", want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactForm(t, click)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now().Add(6*time.Minute), body)
			}},
		{desc: "the endpoint's clock is five minutes and a second later",
			config: func(c *Config) {
				c.Now = func() time.Time { return time.Now().Add(5*time.Minute + time.Second) }
			},
			want: http.StatusUnauthorized,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactForm(t, click)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body)
			}},
		{desc: "body over the limit", want: http.StatusRequestEntityTooLarge,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactForm(t, click) + "&pad=" + strings.Repeat("x", MaxInteractionBytes)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body)
			}},
		{desc: "another team", want: http.StatusForbidden,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				click["team"] = map[string]any{"id": "T0OTHER01", "domain": "other"}
				body := interactForm(t, click)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body)
			}},
		{desc: "another app", want: http.StatusForbidden,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				click["api_app_id"] = "A0OTHER01"
				body := interactForm(t, click)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body)
			}},
		{desc: "signed, without a payload", want: http.StatusBadRequest,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := "command=%2Fsweeper"
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body)
			}},
		// A payload whose keys a lenient reader takes one way or another
		// (encoding/json keeps the last of duplicates) is malformed.
		{desc: "signed, with a key twice in its payload", want: http.StatusBadRequest,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactFormRaw(t, click, `"user":{"id":"U0OTHER01"},`)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body)
			}},
		{desc: "signed, with a key in two letter cases in its payload", want: http.StatusBadRequest,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				body := interactFormRaw(t, click, `"TYPE":"view_closed",`)
				return http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body)
			}},
		{desc: "GET", want: http.StatusMethodNotAllowed,
			request: func(t *testing.T, click map[string]any) (string, string, http.Header) {
				return http.MethodGet, "", nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := interactSetup(t, interactOptions{config: tt.config})
			tk := b.openTicket(t)
			method, body, header := tt.request(t, interactClick(interactTestOwner, message.ActionNotSent, message.ButtonValue(tk.ID, tk.Version)))
			rec := b.serve(t, method, body, header)
			if rec.Code != tt.want {
				t.Errorf("status = %d, want %d (%s)", rec.Code, tt.want, rec.Body)
			}
			b.h.Close()
			if diff := cmp.Diff(tk, b.ticket(t, tk.ID)); diff != "" {
				t.Errorf("the ticket changed (-before +after):\n%s", diff)
			}
			if got := b.operation(t, tk.OperationID).Status; got != ledger.StatusReview {
				t.Errorf("ledger status = %s, want review", got)
			}
			if replies, views := b.api.calls(); len(replies)+len(views) > 0 {
				t.Errorf("Slack was called: %+v %+v", replies, views)
			}
		})
	}
}

// TestInteractionsButtons: each button, by each kind of user, on a current
// or outdated message.
func TestInteractionsButtons(t *testing.T) {
	t.Parallel()
	acked := func(by string) func(review.Ticket) review.Ticket {
		return func(tk review.Ticket) review.Ticket {
			level := tk.EscalationLevel
			tk.AcknowledgedBy, tk.AcknowledgedLevel, tk.Version = by, &level, tk.Version+1
			return tk
		}
	}
	notSent := func(by string) func(review.Ticket) review.Ticket {
		return func(tk review.Ticket) review.Ticket {
			tk.State, tk.Resolution, tk.ResolvedBy, tk.Version = review.StateResolved, review.ResolutionNotSent, by, tk.Version+1
			tk.ResolutionNote = "confirmed not sent in Slack"
			return tk
		}
	}
	// ackedInCLI moves the ticket on before the click: the click's message
	// is outdated.
	ackedInCLI := func(t *testing.T, b *interactBundle, tk review.Ticket) {
		if _, err := b.store.Acknowledge(b.ctx, tk.ID, "cli:alice", tk.Version); err != nil {
			t.Fatal(err)
		}
	}
	resolvedInCLI := func(t *testing.T, b *interactBundle, tk review.Ticket) {
		if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionNotSent, By: "cli:alice"}); err != nil {
			t.Fatal(err)
		}
	}
	shown := func(tk review.Ticket) string { return message.ButtonValue(tk.ID, tk.Version) }

	tests := []struct {
		desc   string
		before func(t *testing.T, b *interactBundle, tk review.Ticket)
		user   string
		action string
		// value is the button's value for the ticket as first opened.
		value func(tk review.Ticket) string
		// want is the ticket expected from the one found before the click;
		// nil: unchanged.
		want       func(review.Ticket) review.Ticket
		wantLedger ledger.Status
		wantReply  string // "" for no reply
		wantViews  int
	}{
		{desc: "owner acknowledges", user: interactTestOwner, action: message.ActionAck, value: shown,
			want: acked("slack:" + interactTestOwner), wantLedger: ledger.StatusReview},
		{desc: "reviewer acknowledges", user: interactTestReviewer, action: message.ActionAck, value: shown,
			want: acked("slack:" + interactTestReviewer), wantLedger: ledger.StatusReview},
		{desc: "owner confirms not sent", user: interactTestOwner, action: message.ActionNotSent, value: shown,
			want: notSent("slack:" + interactTestOwner), wantLedger: ledger.StatusFailed},
		{desc: "reviewer confirms not sent", user: interactTestReviewer, action: message.ActionNotSent, value: shown,
			want: notSent("slack:" + interactTestReviewer), wantLedger: ledger.StatusFailed},
		{desc: "owner opens the mark-done form", user: interactTestOwner, action: message.ActionMarkDone, value: shown,
			wantLedger: ledger.StatusReview, wantViews: 1},
		{desc: "stranger acknowledges", user: interactTestStranger, action: message.ActionAck, value: shown,
			wantLedger: ledger.StatusReview, wantReply: "You are not allowed to act on ticket"},
		{desc: "stranger confirms not sent", user: interactTestStranger, action: message.ActionNotSent, value: shown,
			wantLedger: ledger.StatusReview, wantReply: "You are not allowed to act on ticket"},
		{desc: "stranger clicks mark done", user: interactTestStranger, action: message.ActionMarkDone, value: shown,
			wantLedger: ledger.StatusReview, wantReply: "You are not allowed to act on ticket"},
		{desc: "not sent on an outdated message", before: ackedInCLI, user: interactTestOwner, action: message.ActionNotSent,
			value: shown, wantLedger: ledger.StatusReview, wantReply: "was already handled (it is at version 2, not 1"},
		{desc: "acknowledge on an outdated message", before: ackedInCLI, user: interactTestOwner, action: message.ActionAck,
			value: shown, wantLedger: ledger.StatusReview, wantReply: "was already handled"},
		{desc: "mark done on an outdated message", before: ackedInCLI, user: interactTestOwner, action: message.ActionMarkDone,
			value: shown, wantLedger: ledger.StatusReview, wantReply: "was already handled (it is at version 2, not 1"},
		{desc: "acknowledge a resolved ticket", before: resolvedInCLI, user: interactTestReviewer, action: message.ActionAck,
			value:      func(tk review.Ticket) string { return message.ButtonValue(tk.ID, tk.Version+1) },
			wantLedger: ledger.StatusFailed, wantReply: "was already handled (resolved as not_sent by cli:alice)"},
		{desc: "mark done on a resolved ticket", before: resolvedInCLI, user: interactTestOwner, action: message.ActionMarkDone,
			value:      func(tk review.Ticket) string { return message.ButtonValue(tk.ID, tk.Version+1) },
			wantLedger: ledger.StatusFailed, wantReply: "was already handled (resolved as not_sent by cli:alice)"},
		{desc: "a ticket that does not exist", user: interactTestOwner, action: message.ActionNotSent,
			value:      func(tk review.Ticket) string { return message.ButtonValue(tk.ID+1000000, 1) },
			wantLedger: ledger.StatusReview, wantReply: "does not exist"},
		{desc: "unknown action", user: interactTestOwner, action: "snooze", value: shown,
			wantLedger: ledger.StatusReview},
		{desc: "malformed value", user: interactTestOwner, action: message.ActionNotSent,
			value:      func(review.Ticket) string { return "twelve" },
			wantLedger: ledger.StatusReview},
		{desc: "version 0 would skip the compare-and-set", user: interactTestOwner, action: message.ActionNotSent,
			value:      func(tk review.Ticket) string { return message.ButtonValue(tk.ID, 0) },
			wantLedger: ledger.StatusReview},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := interactSetup(t, interactOptions{})
			opened := b.openTicket(t)
			if tt.before != nil {
				tt.before(t, b, opened)
			}
			before := b.ticket(t, opened.ID)

			rec := b.post(t, interactForm(t, interactClick(tt.user, tt.action, tt.value(opened))))
			if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
				t.Errorf("answer = %d %q, want 200 and no body", rec.Code, rec.Body)
			}
			b.h.Close() // waits for the replies

			want := before
			if tt.want != nil {
				want = tt.want(before)
			}
			got := b.ticket(t, opened.ID)
			if diff := cmp.Diff(want, got, ignoreTimes); diff != "" {
				t.Errorf("ticket (-want +got):\n%s", diff)
			}
			if got := b.operation(t, opened.OperationID).Status; got != tt.wantLedger {
				t.Errorf("ledger status = %s, want %s", got, tt.wantLedger)
			}
			replies, views := b.api.calls()
			switch {
			case tt.wantReply == "" && len(replies) > 0:
				t.Errorf("replies = %+v, want none", replies)
			case tt.wantReply != "" && len(replies) != 1:
				t.Errorf("replies = %+v, want one saying %q", replies, tt.wantReply)
			case tt.wantReply != "":
				want := interactEphemeral{Channel: interactTestChannel, User: tt.user, Text: replies[0].Text}
				if replies[0] != want || !strings.Contains(replies[0].Text, tt.wantReply) {
					t.Errorf("reply = %+v, want to %s in %s saying %q", replies[0], tt.user, interactTestChannel, tt.wantReply)
				}
			}
			if len(views) != tt.wantViews {
				t.Errorf("views.open called %d times, want %d", len(views), tt.wantViews)
			}
		})
	}
}

// TestInteractionsDoubleClick: the same signed request twice — a double
// click or a replay inside Slack's five minutes — changes the ticket once;
// the second gets an ephemeral "already handled".
func TestInteractionsDoubleClick(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc      string
		action    string
		wantEvent string
	}{
		{desc: "acknowledge", action: message.ActionAck, wantEvent: review.EventAcknowledged},
		{desc: "not sent", action: message.ActionNotSent, wantEvent: review.EventResolved},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := interactSetup(t, interactOptions{})
			tk := b.openTicket(t)
			body := interactForm(t, interactClick(interactTestOwner, tt.action, message.ButtonValue(tk.ID, tk.Version)))
			header := interactSigned(interactTestSecret, time.Now(), body)

			for i := range 2 {
				if rec := b.serve(t, http.MethodPost, body, header); rec.Code != http.StatusOK {
					t.Fatalf("request %d: status %d", i+1, rec.Code)
				}
			}
			b.h.Close()

			if got := b.ticket(t, tk.ID).Version; got != tk.Version+1 {
				t.Errorf("version = %d, want %d: one change", got, tk.Version+1)
			}
			if diff := cmp.Diff([]string{review.EventOpened, tt.wantEvent}, b.eventKinds(t, tk.ID)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			replies, _ := b.api.calls()
			if len(replies) != 1 || !strings.Contains(replies[0].Text, "already handled") || replies[0].User != interactTestOwner {
				t.Errorf("replies = %+v, want one \"already handled\" to %s", replies, interactTestOwner)
			}
		})
	}
}

// TestInteractionsConcurrentClicks: clicks served at once, on a real pool,
// change the ticket once; every other click is told it was handled.
func TestInteractionsConcurrentClicks(t *testing.T) {
	t.Parallel()
	b := interactSetup(t, interactOptions{pool: true})
	tk := b.openTicket(t)
	const clicks = 6
	var wg sync.WaitGroup
	for i := range clicks {
		user := interactTestOwner
		if i%2 == 1 {
			user = interactTestReviewer
		}
		body := interactForm(t, interactClick(user, message.ActionNotSent, message.ButtonValue(tk.ID, tk.Version)))
		wg.Go(func() {
			if rec := b.post(t, body); rec.Code != http.StatusOK {
				t.Errorf("status %d", rec.Code)
			}
		})
	}
	wg.Wait()
	b.h.Close()

	if diff := cmp.Diff([]string{review.EventOpened, review.EventResolved}, b.eventKinds(t, tk.ID)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := b.operation(t, tk.OperationID).Status; got != ledger.StatusFailed {
		t.Errorf("ledger status = %s, want failed", got)
	}
	replies, _ := b.api.calls()
	if len(replies) != clicks-1 {
		t.Errorf("%d replies, want %d", len(replies), clicks-1)
	}
	for _, r := range replies {
		if !strings.Contains(r.Text, "already handled") {
			t.Errorf("reply %q, want \"already handled\"", r.Text)
		}
	}
}

// TestInteractionsMarkDone: the button opens the modal with the click's
// trigger_id; its submission resolves the ticket as done with the record
// typed in; a replay of the submission changes nothing more.
func TestInteractionsMarkDone(t *testing.T) {
	t.Parallel()
	b := interactSetup(t, interactOptions{})
	tk := b.openTicket(t)

	rec := b.post(t, interactForm(t, interactClick(interactTestOwner, message.ActionMarkDone, message.ButtonValue(tk.ID, tk.Version))))
	if rec.Code != http.StatusOK {
		t.Fatalf("click: status %d", rec.Code)
	}
	_, views := b.api.calls()
	if len(views) != 1 {
		t.Fatalf("views.open called %d times, want 1", len(views))
	}
	v := views[0]
	if v.TriggerID != interactTestTrigger || v.View.Type != "modal" || v.View.CallbackID != interactMarkDoneCallback ||
		v.View.PrivateMetadata != message.ButtonValue(tk.ID, tk.Version) {
		t.Errorf("views.open got %+v, want the trigger_id %s, callback_id %s and private_metadata %s",
			v, interactTestTrigger, interactMarkDoneCallback, message.ButtonValue(tk.ID, tk.Version))
	}
	input := slices.IndexFunc(v.View.Blocks, func(blk interactViewBlock) bool { return blk.Type == "input" })
	if input < 0 {
		t.Fatalf("the modal has no input block: %+v", v.View.Blocks)
	}
	if blk := v.View.Blocks[input]; blk.BlockID != interactRecordBlock || blk.Optional || blk.Element.Type != "plain_text_input" ||
		blk.Element.ActionID != interactRecordAction || blk.Element.MaxLength != 255 {
		t.Errorf("input block = %+v, want a required plain_text_input %s/%s of at most 255 characters",
			blk, interactRecordBlock, interactRecordAction)
	}
	if got := b.ticket(t, tk.ID); !cmp.Equal(got, tk) {
		t.Errorf("opening the form changed the ticket: %+v", got)
	}

	submission := interactForm(t, interactSubmission(interactTestOwner, v.View.PrivateMetadata, "msg_8Hf2"))
	header := interactSigned(interactTestSecret, time.Now(), submission)
	rec = b.serve(t, http.MethodPost, submission, header)
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("submission: %d %q, want 200 and an empty body (the modal closes)", rec.Code, rec.Body)
	}
	want := tk
	want.State, want.Resolution, want.ResolvedBy = review.StateResolved, review.ResolutionDone, "slack:"+interactTestOwner
	want.ResolutionRecordID, want.ResolutionNote, want.Version = "msg_8Hf2", "marked done in Slack", tk.Version+1
	if diff := cmp.Diff(want, b.ticket(t, tk.ID), ignoreTimes); diff != "" {
		t.Errorf("ticket (-want +got):\n%s", diff)
	}
	op := b.operation(t, tk.OperationID)
	if op.Status != ledger.StatusDone || op.ProviderRecordID != "msg_8Hf2" {
		t.Errorf("ledger row = %s %q, want done msg_8Hf2", op.Status, op.ProviderRecordID)
	}

	// The same submission again: a replay inside the five minutes.
	rec = b.serve(t, http.MethodPost, submission, header)
	if got := interactFormErrors(t, rec); !strings.Contains(got[interactRecordBlock], "was handled meanwhile (resolved as done by slack:"+interactTestOwner+")") {
		t.Errorf("replay answered %v, want a \"handled meanwhile\" error on %s", got, interactRecordBlock)
	}
	if diff := cmp.Diff([]string{review.EventOpened, review.EventResolved}, b.eventKinds(t, tk.ID)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	b.h.Close()
	if replies, views := b.api.calls(); len(replies) > 0 || len(views) != 1 {
		t.Errorf("Slack calls: replies %+v, %d views, want none and 1", replies, len(views))
	}
}

// interactFormErrors reads a response_action "errors" answer.
func interactFormErrors(t *testing.T, rec *httptest.ResponseRecorder) map[string]string {
	t.Helper()
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("answer %d %s %q, want 200 JSON", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var resp struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.ResponseAction != "errors" {
		t.Fatalf("response_action = %q, want errors", resp.ResponseAction)
	}
	return resp.Errors
}

// TestInteractionsMarkDoneRefused: a submission that cannot be applied
// keeps the modal open with an error on the input, and changes nothing.
func TestInteractionsMarkDoneRefused(t *testing.T) {
	t.Parallel()
	shown := func(tk review.Ticket) string { return message.ButtonValue(tk.ID, tk.Version) }
	tests := []struct {
		desc     string
		before   func(t *testing.T, b *interactBundle, tk review.Ticket)
		user     string
		metadata func(tk review.Ticket) string
		recordID string
		want     string
	}{
		{desc: "empty record id", user: interactTestOwner, metadata: shown, recordID: "",
			want: "Enter the provider's record id."},
		{desc: "blank record id", user: interactTestOwner, metadata: shown, recordID: " \t ",
			want: "Enter the provider's record id."},
		{desc: "record id with space around it", user: interactTestOwner, metadata: shown, recordID: " msg_1 ",
			want: "provider_record_id: malformed provider record id: has white space around it; your form changed nothing"},
		{desc: "record id with a newline after it", user: interactTestOwner, metadata: shown, recordID: "msg_1\n",
			want: "provider_record_id: malformed provider record id"},
		{desc: "record id of 200 characters over 512 bytes", user: interactTestOwner, metadata: shown, recordID: strings.Repeat("€", 200),
			want: "provider_record_id: malformed provider record id: 600 bytes, more than 512"},
		{desc: "record id over 255 characters", user: interactTestOwner, metadata: shown, recordID: strings.Repeat("é", 256),
			want: "at most 255 characters"},
		{desc: "stranger", user: interactTestStranger, metadata: shown, recordID: "msg_1",
			want: "You are not allowed to act on ticket"},
		{desc: "ticket changed since the form opened", user: interactTestOwner, metadata: shown, recordID: "msg_1",
			before: func(t *testing.T, b *interactBundle, tk review.Ticket) {
				if _, err := b.store.Acknowledge(b.ctx, tk.ID, "cli:alice", tk.Version); err != nil {
					t.Fatal(err)
				}
			},
			want: "was handled meanwhile (it is at version 2, not 1"},
		{desc: "record already proves another operation", user: interactTestReviewer, metadata: shown, recordID: "msg_taken",
			before: func(t *testing.T, b *interactBundle, tk review.Ticket) {
				other := b.openTicket(t)
				if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: other.ID, Outcome: review.ResolutionDone,
					ProviderRecordID: "msg_taken", By: "cli:alice"}); err != nil {
					t.Fatal(err)
				}
			},
			want: "msg_taken already proves operation"},
		{desc: "damaged metadata", user: interactTestOwner, metadata: func(review.Ticket) string { return "12" }, recordID: "msg_1",
			want: "This form is damaged"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := interactSetup(t, interactOptions{})
			opened := b.openTicket(t)
			if tt.before != nil {
				tt.before(t, b, opened)
			}
			before := b.ticket(t, opened.ID)

			rec := b.post(t, interactForm(t, interactSubmission(tt.user, tt.metadata(opened), tt.recordID)))
			if got := interactFormErrors(t, rec)[interactRecordBlock]; !strings.Contains(got, tt.want) {
				t.Errorf("error on %s = %q, want %q", interactRecordBlock, got, tt.want)
			}
			if diff := cmp.Diff(before, b.ticket(t, opened.ID)); diff != "" {
				t.Errorf("the ticket changed (-before +after):\n%s", diff)
			}
			if got := b.operation(t, opened.OperationID).Status; got != ledger.StatusReview {
				t.Errorf("ledger status = %s, want review", got)
			}
			b.h.Close()
			if replies, views := b.api.calls(); len(replies)+len(views) > 0 {
				t.Errorf("Slack was called: %+v %+v", replies, views)
			}
		})
	}
}

// TestInteractionsIgnoresOthers: interactions sweeper does not handle get
// 200 — Slack would otherwise show an error or retry — and nothing else.
func TestInteractionsIgnoresOthers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		payload func(tk review.Ticket) map[string]any
	}{
		{desc: "view closed", payload: func(tk review.Ticket) map[string]any {
			p := interactSubmission(interactTestOwner, message.ButtonValue(tk.ID, tk.Version), "msg_1")
			p["type"] = "view_closed"
			return p
		}},
		{desc: "another modal submitted", payload: func(tk review.Ticket) map[string]any {
			p := interactSubmission(interactTestOwner, message.ButtonValue(tk.ID, tk.Version), "msg_1")
			p["view"].(map[string]any)["callback_id"] = "feedback"
			return p
		}},
		{desc: "shortcut", payload: func(review.Ticket) map[string]any {
			return map[string]any{"type": "shortcut", "callback_id": "open_ticket", "trigger_id": interactTestTrigger,
				"team": map[string]any{"id": interactTestTeam}, "user": map[string]any{"id": interactTestOwner},
				"api_app_id": interactTestApp}
		}},
		{desc: "block actions without an action", payload: func(tk review.Ticket) map[string]any {
			p := interactClick(interactTestOwner, message.ActionNotSent, message.ButtonValue(tk.ID, tk.Version))
			p["actions"] = []any{}
			return p
		}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := interactSetup(t, interactOptions{})
			tk := b.openTicket(t)
			rec := b.post(t, interactForm(t, tt.payload(tk)))
			if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
				t.Errorf("answer = %d %q, want 200 and no body", rec.Code, rec.Body)
			}
			b.h.Close()
			if diff := cmp.Diff(tk, b.ticket(t, tk.ID)); diff != "" {
				t.Errorf("the ticket changed (-before +after):\n%s", diff)
			}
			if replies, views := b.api.calls(); len(replies)+len(views) > 0 {
				t.Errorf("Slack was called: %+v %+v", replies, views)
			}
		})
	}
}

// TestInteractionsAnswersBeforeReplying: a slow chat.postEphemeral does not
// hold the answer; Close waits for the reply.
func TestInteractionsAnswersBeforeReplying(t *testing.T) {
	t.Parallel()
	b := interactSetup(t, interactOptions{holdReplies: true})
	tk := b.openTicket(t)
	start := time.Now()
	rec := b.post(t, interactForm(t, interactClick(interactTestStranger, message.ActionAck, message.ButtonValue(tk.ID, tk.Version))))
	if took := time.Since(start); rec.Code != http.StatusOK || took > time.Second {
		t.Errorf("answered %d after %s while the reply was held, want 200 at once", rec.Code, took)
	}
	if replies, _ := b.api.calls(); len(replies) != 0 {
		t.Fatalf("reply delivered while held: %+v", replies)
	}
	b.api.release()
	b.h.Close()
	if replies, _ := b.api.calls(); len(replies) != 1 || !strings.Contains(replies[0].Text, "not allowed") {
		t.Errorf("replies after Close = %+v, want one \"not allowed\"", replies)
	}
}

func TestNewInteractionsRequires(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	for _, field := range []string{"SigningSecret", "Resolver", "Slack"} {
		if err == nil || !strings.Contains(err.Error(), field+" is required") {
			t.Errorf("New(empty) = %v, want it to name %s", err, field)
		}
	}
}
