package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/notify/webhook"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

const secret = "whsec_3fa9c1d2e8b7"

// received is one request the test's webhook got.
type received struct {
	header http.Header
	body   []byte
	// valid: the signature checked out by the test's own verifier.
	valid bool
}

// server is a webhook receiver written for the test: it checks the
// signature with its own implementation of the documented scheme, and
// answers with the statuses queued (200 when none is).
type server struct {
	*httptest.Server
	mu       sync.Mutex
	got      []received
	statuses []int
}

func newServer(t *testing.T) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.got = append(s.got, received{header: r.Header.Clone(), body: body, valid: independentVerify(r.Header.Get("Sweeper-Signature"), body)})
		status := http.StatusOK
		if len(s.statuses) > 0 {
			status, s.statuses = s.statuses[0], s.statuses[1:]
		}
		w.WriteHeader(status)
		fmt.Fprint(w, "noted")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) answer(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, statuses...)
}

func (s *server) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

var sigRE = regexp.MustCompile(`^t=(\d+),v1=([0-9a-f]{64})$`)

// independentVerify checks a Sweeper-Signature header as docs/receivers.md
// describes it, written apart from the receiver's code.
func independentVerify(header string, body []byte) bool {
	m := sigRE.FindStringSubmatch(header)
	if m == nil {
		return false
	}
	sec, _ := strconv.ParseInt(m[1], 10, 64)
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(append([]byte(m[1]+"."), body...))
	return hex.EncodeToString(mac.Sum(nil)) == m[2]
}

type bundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	srv  *server
	n    int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	b := &bundle{ctx: context.Background(), pool: dbtest.NewPool(t), srv: newServer(t)}
	if _, err := outbox.NewRoutes(b.pool).SetRoutes(b.ctx, []outbox.Route{{Receiver: outbox.ReceiverWebhook}, {Receiver: outbox.ReceiverSlack}}); err != nil {
		t.Fatal(err)
	}
	return b
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (b *bundle) dispatcher(t *testing.T, id string, now func() time.Time) *notify.Dispatcher {
	t.Helper()
	return b.dispatcherAt(t, id, b.srv.URL+"/hook/abc", now)
}

// dispatcherAt is a dispatcher of the webhook at url.
func (b *bundle) dispatcherAt(t *testing.T, id, url string, now func() time.Time) *notify.Dispatcher {
	t.Helper()
	tickets := review.NewReader(b.pool, ledger.Native())
	r, err := webhook.New(webhook.Config{URL: url, Secret: []byte(secret), Tickets: tickets, GiveUpAfter: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	d, err := notify.NewDispatcher(b.pool, r, notify.DispatcherConfig{
		Tickets: tickets, Muter: silence.NewStore(b.pool), ID: id, Receiver: outbox.ReceiverWebhook, Lease: 30 * time.Second,
		Backoff: func(int) time.Duration { return 0 },
		Logger:  slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var policy = review.Policy{DefaultOwner: "U0OWNER", Window: 4 * time.Hour, Priority: "normal"}

func (b *bundle) open(t *testing.T) int64 {
	t.Helper()
	b.n++
	c, err := ledger.NewStore(b.pool, ledger.Native()).Claim(b.ctx, ledger.Attempt{
		OpKey: fmt.Sprintf("op-%s-%d", t.Name(), b.n), Workflow: "payments", Provider: "mailer", Action: "send_email",
		Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"template":"receipt"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := proof.Decide(c.Operation, proof.Answered(proof.SearchFor(c.Operation, providers.Matching{ByKey: true}, now), nil))
	ev := proof.NewEvidence(c.Operation, proof.LookupReport{Adapter: "sim", Outcome: proof.Answered(providers.Query{}, nil), At: now}, d)
	applied, err := review.NewStore(b.pool, ledger.Native(), policy).Apply(b.ctx, c.Operation, d, ev, now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("open ticket: %+v, %v", applied, err)
	}
	return applied.TicketID
}

func (b *bundle) rows(t *testing.T, id int64) []outbox.Notification {
	t.Helper()
	list, err := outbox.NewStore(b.pool).List(b.ctx, outbox.Filter{TicketID: id, Receiver: outbox.ReceiverWebhook})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestSignedEventRetriedWithOneKey: each event is POSTed signed (checked
// by the test's own verifier), with its idempotency key in the body and
// the header; a 500 is retried with the same key; 2xx is delivered.
func TestSignedEventRetriedWithOneKey(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "w1", nil)
	id := b.open(t)
	b.srv.answer(http.StatusInternalServerError)
	if st, err := d.DispatchOnce(b.ctx); err != nil || st.Failed != 1 {
		t.Fatalf("first attempt: %+v, %v", st, err)
	}
	if st, err := d.Drain(b.ctx); err != nil || st.Sent != 1 {
		t.Fatalf("retry: %+v, %v", st, err)
	}
	got := b.srv.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	want := "sweeper:" + review.OpenedKey(id)
	for i, r := range got {
		var ev struct {
			ID     string `json:"id"`
			Type   string `json:"type"`
			Ticket struct {
				ID              int64  `json:"id"`
				RecipientMasked string `json:"recipient_masked"`
			} `json:"ticket"`
		}
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		if !r.valid {
			t.Errorf("request %d: signature %q does not verify", i, r.header.Get("Sweeper-Signature"))
		}
		if ev.ID != want || r.header.Get("Idempotency-Key") != want || ev.Type != "ticket.opened" || ev.Ticket.ID != id {
			t.Errorf("request %d: id %q, header %q, type %q, ticket %d; want %q, ticket.opened, %d", i, ev.ID, r.header.Get("Idempotency-Key"), ev.Type, ev.Ticket.ID, want, id)
		}
		if strings.Contains(string(r.body), "jane.doe") || ev.Ticket.RecipientMasked == "" {
			t.Errorf("request %d: the raw recipient, or no masked one: %s", i, r.body)
		}
	}
	if rows := b.rows(t, id); len(rows) != 1 || rows[0].State != outbox.StateSent || rows[0].LastError != "" {
		t.Fatalf("rows %+v, want one sent", rows)
	}
	// A tampered body or another secret does not verify.
	if independentVerify(got[1].header.Get("Sweeper-Signature"), append(got[1].body, ' ')) {
		t.Error("the test's verifier accepts a tampered body")
	}
}

// TestGoneIsParked: 410 parks the row (gone); a replay delivers it.
func TestGoneIsParked(t *testing.T) {
	b := setup(t)
	id := b.open(t)
	b.srv.answer(http.StatusGone)
	if st, err := b.dispatcher(t, "w1", nil).Drain(b.ctx); err != nil || st.Parked != 1 {
		t.Fatalf("%+v, %v; want parked", st, err)
	}
	row := b.rows(t, id)[0]
	if row.State != outbox.StateParked || row.ErrorCode != webhook.CodeGone || strings.Contains(row.LastError, "/hook/abc") {
		t.Fatalf("row %+v, want parked gone, without the URL in its error", row)
	}
	if _, err := outbox.NewStore(b.pool).Replay(b.ctx, row.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if st, err := b.dispatcher(t, "w2", nil).Drain(b.ctx); err != nil || st.Sent != 1 {
		t.Fatalf("after the replay: %+v, %v", st, err)
	}
}

// TestFailingPastTheLimitIsParked: a row failing for longer than
// give_up_after is parked (gave_up); 429 is a rate limit, not a failure.
func TestFailingPastTheLimitIsParked(t *testing.T) {
	b := setup(t)
	id := b.open(t)
	b.srv.answer(http.StatusTooManyRequests, http.StatusBadGateway, http.StatusBadGateway)
	if st, err := b.dispatcher(t, "w1", nil).DispatchOnce(b.ctx); err != nil || st.RateLimited != 1 {
		t.Fatalf("429: %+v, %v; want rate limited", st, err)
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE sweeper.outbox SET lease_until = now() WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if st, err := b.dispatcher(t, "w1", nil).DispatchOnce(b.ctx); err != nil || st.Failed != 1 {
		t.Fatalf("502: %+v, %v; want retried", st, err)
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	if st, err := b.dispatcher(t, "w2", later).DispatchOnce(b.ctx); err != nil || st.Parked != 1 {
		t.Fatalf("failing for 2h: %+v, %v; want parked", st, err)
	}
	if row := b.rows(t, id)[0]; row.ErrorCode != notify.CodeGaveUp {
		t.Fatalf("row %+v, want %s", row, notify.CodeGaveUp)
	}
}

// receiversDoc is the page documenting this receiver, relative to the
// package.
const receiversDoc = "../../docs/receivers.md"

// docBlock returns the fenced code block after marker in docs/receivers.md.
func docBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile(receiversDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("%s has no %s", receiversDoc, marker)
	}
	text = text[i:]
	start := strings.Index(text, "```")
	start += strings.Index(text[start:], "\n") + 1
	end := strings.Index(text[start:], "\n```")
	return text[start : start+end+1]
}

// vector is a real signature of this receiver, for docs/receivers.md's snippets.
type vector struct {
	Secret string `json:"secret"`
	T      int64  `json:"t"`
	Body   string `json:"body"`
	Header string `json:"header"`
}

// TestSignatureVectors: testdata/signature_vectors.json holds what Sign
// gives; the JavaScript snippet's test (examples/webhook) checks them.
func TestSignatureVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/signature_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil || len(vs) == 0 {
		t.Fatalf("vectors: %v", err)
	}
	for _, v := range vs {
		if got := webhook.Sign([]byte(v.Secret), time.Unix(v.T, 0), []byte(v.Body)); got != v.Header {
			t.Errorf("Sign(%q, %d, %q) = %s, vector says %s", v.Secret, v.T, v.Body, got, v.Header)
		}
	}
}

// TestDocGoSnippet runs docs/receivers.md's Go verifier on a real delivery:
// it accepts it, and refuses a tampered body, another secret and an old
// timestamp.
func TestDocGoSnippet(t *testing.T) {
	b := setup(t)
	b.open(t)
	if st, err := b.dispatcher(t, "w1", nil).Drain(b.ctx); err != nil || st.Sent != 1 {
		t.Fatalf("%+v, %v", st, err)
	}
	r := b.srv.requests()[0]
	dir := t.TempDir()
	snippet := strings.Replace(docBlock(t, "<!-- webhook-verify-go -->"), "package webhookverify", "package main", 1)
	main := `package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	now, _ := strconv.ParseInt(os.Args[4], 10, 64)
	body, _ := os.ReadFile(os.Args[3])
	fmt.Print(VerifySweeperSignature([]byte(os.Args[1]), os.Args[2], body, time.Unix(now, 0), 5*time.Minute))
}
`
	for name, text := range map[string]string{"verify.go": snippet, "main.go": main, "go.mod": "module snippet\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", "verify", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docs/receivers.md's Go snippet does not build: %v\n%s", err, out)
	}
	header := r.header.Get("Sweeper-Signature")
	ts := sigRE.FindStringSubmatch(header)[1]
	sec, _ := strconv.ParseInt(ts, 10, 64)
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, tampered := write("good", r.body), write("tampered", append(append([]byte(nil), r.body...), ' '))
	for _, c := range []struct {
		name, secret, body string
		now                int64
		want               string
	}{
		{"the delivery", secret, good, sec + 10, "true"},
		{"a tampered body", secret, tampered, sec + 10, "false"},
		{"another secret", secret + "x", good, sec + 10, "false"},
		{"an old timestamp", secret, good, sec + 600, "false"},
	} {
		out, err := exec.Command(filepath.Join(dir, "verify"), c.secret, header, c.body, strconv.FormatInt(c.now, 10)).Output()
		if err != nil || string(out) != c.want {
			t.Errorf("%s: %q, %v; want %s", c.name, out, err, c.want)
		}
	}
}

// TestDocJSSnippet runs the JavaScript snippet's node test
// (examples/webhook/verify_test.mjs, also run by make nodetest) on the
// vectors.
func TestDocJSSnippet(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; make nodetest runs this test and needs it")
	}
	cmd := exec.Command(node, "--test", "examples/webhook/verify_test.mjs")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --test examples/webhook/verify_test.mjs: %v\n%s", err, out)
	}
}

// TestRedirectIsNeverDelivered: a webhook answering 302 (to a page that
// answers 200), 307 or 308 (which re-post the signed event and its
// Idempotency-Key) never has the row recorded sent, and the address its
// Location names never sees a request: the row is parked redirect, its
// error naming the status and the key to fix, until a person replays it.
func TestRedirectIsNeverDelivered(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			b := setup(t)
			var elsewhere atomic.Int32
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
				fmt.Fprint(w, "welcome")
			}))
			t.Cleanup(target.Close)
			var asked atomic.Int32
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				http.Redirect(w, r, target.URL+"/collect?token=abc", status)
			}))
			t.Cleanup(redirector.Close)
			id := b.open(t)
			st, err := b.dispatcherAt(t, "w1", redirector.URL+"/hook/abc", nil).Drain(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			row := b.rows(t, id)[0]
			if st.Sent != 0 || st.Parked != 1 || row.State != outbox.StateParked || row.ErrorCode != notify.CodeRedirect {
				t.Fatalf("%+v, row %+v; want parked %s, never sent", st, row, notify.CodeRedirect)
			}
			for _, s := range []string{strconv.Itoa(status), "redirects are not followed", "webhook.url"} {
				if !strings.Contains(row.LastError, s) {
					t.Errorf("the row's error %q does not say %q", row.LastError, s)
				}
			}
			if strings.Contains(row.LastError, "token=abc") || strings.Contains(row.LastError, "/hook/abc") {
				t.Errorf("the row's error %q quotes a path", row.LastError)
			}
			if n := elsewhere.Load(); n != 0 || asked.Load() != 1 {
				t.Errorf("the redirect's target got %d requests, the webhook %d; want 0 and 1", n, asked.Load())
			}
		})
	}
}
