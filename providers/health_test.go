package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// jsonAdapter is a hand-written HTTP adapter: one GET through the read-only
// transport, its 200 body read strictly as {"matches": [{"id": …}]}, its
// errors worded as an adapter's own (no providers.Malformed), so that the
// provider's health must tell an answer from a failure by the exchange.
type jsonAdapter struct {
	url    string
	client *http.Client
}

func newJSONAdapter(url string) *jsonAdapter {
	return &jsonAdapter{url: url, client: &http.Client{Transport: providers.ReadOnlyTransport{}}}
}

func (a *jsonAdapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"?op_key="+q.OpKey, nil)
	if err != nil {
		return nil, providers.Permanent(err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("fake: GET: %w", err))
	}
	body, err := providers.HTTPAnswer{Name: "fake", MaxBody: 1 << 16}.Read(ctx, resp)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Matches []struct {
			ID string `json:"id"`
		} `json:"matches"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, providers.Transient(fmt.Errorf("fake: cannot read the body: %v", err)) // no %w: no marker
	}
	if answer.Matches == nil {
		return nil, providers.Transient(errors.New("fake: response has no matches field"))
	}
	var records []providers.Record
	for _, m := range answer.Matches {
		records = append(records, providers.Record{ID: m.ID})
	}
	return records, nil
}

// TestOnlyTheProvidersFailuresCount: what a lookup reports to the
// provider's health, answer by answer. A failure is the provider's own —
// a 5xx, a refused or cut connection, no answer in time (a 429 after the
// wait it asked for: TestRefusedAgainAfterItsWait) — or the
// operation's: an answer the provider gave that cannot be read (an HTML
// page, a body without the field, a record id the ledger cannot hold),
// which is retried within the operation's budget like any transient error
// but says the provider is there.
func TestOnlyTheProvidersFailuresCount(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch key := r.URL.Query().Get("op_key"); key {
		case "ok":
			fmt.Fprint(w, `{"matches":[{"id":"rec_1"}]}`)
		case "none":
			fmt.Fprint(w, `{"matches":[]}`)
		case "500":
			http.Error(w, "internal error", http.StatusInternalServerError)
		case "503":
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
		case "429":
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		case "404":
			http.NotFound(w, r)
		case "html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Maintenance</body></html>")
		case "empty-object":
			fmt.Fprint(w, `{}`)
		case "nul-id":
			fmt.Fprint(w, `{"matches":[{"id":"rec\u0000x"}]}`)
		case "long-id":
			fmt.Fprintf(w, `{"matches":[{"id":%q}]}`, strings.Repeat("r", 9000))
		case "slow":
			<-r.Context().Done()
		case "cut":
			// Headers promise a body the connection drops half way.
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"matches":[`)
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		default:
			t.Errorf("unexpected op_key %q", key)
		}
	}))
	t.Cleanup(server.Close)
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()

	for _, c := range []struct {
		desc, url, op string
		wantErr       bool
		wantFailed    bool
	}{
		{"records", server.URL, "ok", false, false},
		{"no records", server.URL, "none", false, false},
		{"HTTP 404 is the provider answering", server.URL, "404", true, false},
		{"a first HTTP 429 is the provider asking to wait: reported as nothing", server.URL, "429", true, false},
		{"HTTP 500 is the provider's failure", server.URL, "500", true, true},
		{"HTTP 503 is the provider's failure", server.URL, "503", true, true},
		{"a refused connection is the provider's failure", refused, "ok", true, true},
		{"a body cut off is the provider's failure", server.URL, "cut", true, true},
		{"no answer in time is the provider's failure", server.URL, "slow", true, true},
		{"an HTML page is an unreadable answer", server.URL, "html", true, false},
		{"{} is an unreadable answer", server.URL, "empty-object", true, false},
		{"a record id holding NUL is an unreadable answer", server.URL, "nul-id", true, false},
		{"a 9,000-byte record id is an unreadable answer", server.URL, "long-id", true, false},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			h := &fakeHealth{}
			// Only the slow answer is to outlast lookup_timeout: the others
			// get one no loaded machine outlasts.
			timeout := time.Minute
			if c.op == "slow" {
				timeout = 300 * time.Millisecond
			}
			p := providers.NewProvider("orders", "http", newJSONAdapter(c.url), limits(timeout))
			p.SetHealth(h)
			q := query
			q.OpKey = c.op
			_, err := p.Lookup(t.Context(), q)
			if (err != nil) != c.wantErr {
				t.Fatalf("Lookup error = %v, want error %v", err, c.wantErr)
			}
			want := []string{fmt.Sprintf("%s failed=%t", c.op, c.wantFailed)}
			if c.op == "429" {
				// Neither a failure nor an answer: it does not start the
				// count of failures again either.
				want = nil
			}
			if fmt.Sprint(h.dones) != fmt.Sprint(want) {
				t.Errorf("reported to health %q, want %q (error: %v)", h.dones, want, err)
			}
			if strings.Contains(c.desc, "record id") && !providers.Unreadable(err) {
				t.Errorf("Unreadable(%v) = false: a record sweeper cannot hold is malformed", err)
			}
		})
	}
}

// TestBatchUnreadableAnswersAreNoOutage: a batch request answered with
// every operation's answer unreadable (each record's id holds NUL) and one
// whose answer as a whole is malformed report the provider as answering; a
// batch request refused with a 503 as a whole is a failure of each of its
// operations.
func TestBatchUnreadableAnswersAreNoOutage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc   string
		answer func(qs []providers.Query) ([]providers.BatchAnswer, error)
		want   []string
	}{
		{"every record unreadable", func(qs []providers.Query) ([]providers.BatchAnswer, error) {
			out := make([]providers.BatchAnswer, len(qs))
			for i := range qs {
				out[i].Records = []providers.Record{{ID: "rec\x00" + qs[i].OpKey}}
			}
			return out, nil
		}, []string{"op-00,op-01 failed=false"}},
		{"the answer malformed as a whole", func(qs []providers.Query) ([]providers.BatchAnswer, error) {
			return nil, providers.Malformed(errors.New("a row for an op_key that was not asked"))
		}, []string{"op-00,op-01 failed=false", "op-00 failed=false", "op-01 failed=false"}},
		{"the request refused with a 503", func(qs []providers.Query) ([]providers.BatchAnswer, error) {
			return nil, providers.Transient(errors.New("HTTP 503"))
		}, []string{"op-00 failed=true", "op-01 failed=true"}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			h := &fakeHealth{}
			p := providers.NewProvider("orders", "http", &batchAdapter{max: 2, answer: c.answer}, limits(time.Second))
			p.SetHealth(h)
			for i, r := range p.LookupMany(t.Context(), queries(2)) {
				if class, _ := providers.Classify(r.Err); r.Err == nil || class != providers.ClassTransient {
					t.Errorf("result %d = %+v; want a transient error", i, r)
				}
			}
			if fmt.Sprint(h.dones) != fmt.Sprint(c.want) {
				t.Errorf("reported to health %q, want %q", h.dones, c.want)
			}
		})
	}
}

// TestRefusedAgainAfterItsWait: a 429 honoured — the first for an
// operation, or one for a request sent before the wait its last 429 asked
// for had passed — is reported to the provider's health as nothing: no
// failure, and no answer that would start the count again. A 429 for an
// operation asked again after that wait is the provider's failure, with
// a Retry-After or without one (the wait sweeper gives it then: a
// second). An answer forgets every refusal; a probe refused is a failed
// probe.
func TestRefusedAgainAfterItsWait(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch key := r.URL.Query().Get("op_key"); {
		case key == "ok":
			fmt.Fprint(w, `{"matches":[]}`)
		case strings.HasPrefix(key, "bare"):
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	t.Cleanup(server.Close)
	h := &fakeHealth{}
	p := providers.NewProvider("orders", "http", newJSONAdapter(server.URL), limits(time.Minute))
	p.SetHealth(h)
	ask := func(op string) {
		t.Helper()
		q := query
		q.OpKey = op
		_, err := p.Lookup(t.Context(), q)
		if op == "ok" {
			if err != nil {
				t.Fatalf("Lookup(%s): %v", op, err)
			}
			return
		}
		if class, _ := providers.Classify(err); class != providers.ClassRateLimited {
			t.Fatalf("Lookup(%s) = %v; want rate limited", op, err)
		}
	}
	expect := func(step string, want ...string) {
		t.Helper()
		h.mu.Lock()
		got := h.dones
		h.dones = nil
		h.mu.Unlock()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: reported to health %q, want %q", step, got, want)
		}
	}

	ask("op-a")
	ask("bare-a")
	expect("the first 429s")
	ask("op-a")
	expect("op-a asked again within its Retry-After")
	time.Sleep(1100 * time.Millisecond)
	ask("op-a")
	ask("bare-a")
	ask("op-b")
	h.mu.Lock()
	details := h.details
	h.details = nil
	h.mu.Unlock()
	expect("after the waits", "op-a failed=true", "bare-a failed=true")
	for _, d := range details {
		if !strings.Contains(d, "refused again after the wait it asked for") || !strings.Contains(d, "HTTP 429") {
			t.Errorf("detail %q does not say the provider refused again after its wait", d)
		}
	}

	ask("ok")
	expect("an answer", "ok failed=false")
	time.Sleep(1100 * time.Millisecond)
	ask("op-a")
	ask("op-b")
	expect("after an answer, the first 429s again")

	h.probe.Store(true)
	ask("op-c")
	expect("a probe refused", "probe op-c failed=true")
}

// TestBatchRefusedAgainAfterItsWait: a batch request refused with a 429
// as a whole, then again after its wait, is a failure of each of its
// operations the second time only.
func TestBatchRefusedAgainAfterItsWait(t *testing.T) {
	t.Parallel()
	h := &fakeHealth{}
	a := &batchAdapter{max: 2, answer: func(qs []providers.Query) ([]providers.BatchAnswer, error) {
		return nil, providers.RateLimited(0, errors.New("HTTP 429"))
	}}
	p := providers.NewProvider("orders", "http", a, limits(time.Second))
	p.SetHealth(h)
	p.LookupMany(t.Context(), queries(2))
	if len(h.dones) != 0 {
		t.Errorf("first 429: reported to health %q, want nothing", h.dones)
	}
	time.Sleep(1100 * time.Millisecond)
	p.LookupMany(t.Context(), queries(2))
	if want := []string{"op-00 failed=true", "op-01 failed=true"}; fmt.Sprint(h.dones) != fmt.Sprint(want) {
		t.Errorf("429 after its wait: reported to health %q, want %q", h.dones, want)
	}
}
