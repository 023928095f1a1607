package stripe_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/stripe"
)

// TestStripeMock checks that the adapter reads what Stripe's own API
// description says a search returns, through the real SDK, against
// stripe-mock (github.com/stripe/stripe-mock, a tool dependency in go.mod,
// built here from the module cache: nothing but the Go toolchain is needed).
// stripe-mock is stateless and answers with fixtures, so this checks shapes,
// not found/not-found semantics.
func TestStripeMock(t *testing.T) {
	t.Parallel()
	base := startStripeMock(t)

	var nonGET atomic.Int64
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	counting := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet {
			nonGET.Add(1)
		}
		return transport.RoundTrip(r)
	})
	newMockLookup := func(key string, transport http.RoundTripper, objects ...string) providers.Lookup {
		cfg := stripe.Kind.NewSettings().(*stripe.Config)
		cfg.APIBase, cfg.SecretKeyEnv = base, "STRIPE_KEY"
		cfg.Objects = []string{"payment_intents", "charges"}
		if objects != nil {
			cfg.Objects = objects
		}
		if errs := cfg.Validate(); len(errs) > 0 {
			t.Fatal(errs)
		}
		a, err := stripe.New("stripe-mock", cfg, providertest.Env(transport, "STRIPE_KEY", key))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	// stripe-mock's fixtures are the same object whatever the search, and
	// their metadata does not hold the op_key searched for: as they are,
	// they are no match.
	t.Run("fixtures without the op_key are no match", func(t *testing.T) {
		records, err := lookup(t, newMockLookup("sk_test_123", counting), query("order-1234", time.Hour))
		if err != nil || len(records) != 0 {
			t.Fatalf("Lookup = %+v, %v; want no records: the fixtures do not carry the op_key", records, err)
		}
	})

	t.Run("search results decode into records", func(t *testing.T) {
		const opKey = `order-1234 o'brien \ x`
		records, err := lookup(t, newMockLookup("sk_test_123", withOpKey(t, counting, opKey)), query(opKey, time.Hour))
		if err != nil {
			t.Fatalf("Lookup against stripe-mock: %v", err)
		}
		if len(records) == 0 {
			t.Fatal("stripe-mock's fixtures hold an object per search; the adapter returned none")
		}
		for _, r := range records {
			t.Logf("record: %+v", r)
			if !strings.HasPrefix(r.ID, "pi_") && !strings.HasPrefix(r.ID, "ch_") {
				t.Errorf("record id %q is not a PaymentIntent's or a Charge's", r.ID)
			}
			if r.CreatedAt.IsZero() || r.Excerpt == "" {
				t.Errorf("record %s: created %v, excerpt %q", r.ID, r.CreatedAt, r.Excerpt)
			}
			if _, ok := r.Fields["amount"]; !ok {
				t.Errorf("record %s has no amount: %v", r.ID, r.Fields)
			}
			if _, ok := r.Fields["currency"]; !ok {
				t.Errorf("record %s has no currency: %v", r.ID, r.Fields)
			}
		}
	})

	t.Run("a batch search of OR-joined clauses decodes, each object to its op_key", func(t *testing.T) {
		qs := make([]providers.Query, stripe.MaxClauses)
		for i := range qs {
			qs[i] = query(strings.Repeat("x", 200)+"-o'brien-"+string(rune('a'+i)), time.Hour)
		}
		a := newMockLookup("sk_test_123", withOpKey(t, counting, qs[3].OpKey)).(providers.BatchLookup)
		answers, err := a.LookupBatch(context.Background(), qs)
		if err != nil {
			t.Fatalf("LookupBatch against stripe-mock: %v", err)
		}
		for i, ans := range answers {
			if ans.Err != nil || (i == 3) != (len(ans.Records) > 0) {
				t.Errorf("answer %d: %d records, %v; want records for operation 3 alone", i, len(ans.Records), ans.Err)
			}
		}
	})

	t.Run("invoice search results and invoice lists decode into records", func(t *testing.T) {
		const opKey = "order-1234-invoice"
		l := newMockLookup("sk_test_123", withOpKey(t, counting, opKey), stripe.ObjectInvoices)
		searched := query(opKey, time.Hour)
		listed := query(opKey, time.Hour)
		listed.Recipient = "cus_mock1"
		for _, q := range []providers.Query{searched, listed} {
			records, err := lookup(t, l, q)
			if err != nil {
				t.Fatalf("recipient %s: Lookup against stripe-mock: %v", q.Recipient, err)
			}
			if len(records) == 0 {
				t.Fatalf("recipient %s: stripe-mock's fixtures hold an invoice; the adapter returned none", q.Recipient)
			}
			for _, r := range records {
				t.Logf("record: %+v", r)
				if !strings.HasPrefix(r.ID, "in_") || r.CreatedAt.IsZero() || r.State == "" {
					t.Errorf("record %+v is not an invoice's, dated, with a state", r)
				}
				if _, ok := r.Fields["amount"]; !ok {
					t.Errorf("record %s has no amount: %v", r.ID, r.Fields)
				}
			}
		}
	})

	t.Run("a rejected key is permanent and not echoed", func(t *testing.T) {
		// stripe-mock quotes the Authorization header it rejects.
		const key = "KIT-not-a-stripe-key-5u9er53cret"
		records, err := newMockLookup(key, counting).Lookup(context.Background(), query("order-1234", time.Hour))
		if err == nil {
			t.Fatalf("Lookup with a malformed key = %v, nil; want an error", records)
		}
		t.Logf("error: %v", err)
		if class, _ := providers.Classify(err); class != providers.ClassPermanent {
			t.Errorf("class %s, want permanent: %v", class, err)
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("the error carries the key: %v", err)
		}
	})

	if n := nonGET.Load(); n != 0 {
		t.Errorf("I1: %d request(s) other than GET left the adapter", n)
	}
}

// withOpKey adds metadata[op_key] = opKey to every object of stripe-mock's
// search results, as a workflow would have set it, keeping the rest of its
// fixtures' shapes as they are.
func withOpKey(t *testing.T, next http.RoundTripper, opKey string) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		isPage := strings.HasSuffix(r.URL.Path, "/search") || strings.HasSuffix(r.URL.Path, "/v1/invoices")
		if err != nil || resp.StatusCode != http.StatusOK || !isPage {
			return resp, err
		}
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		dec.UseNumber()
		var page map[string]any
		if err := dec.Decode(&page); err != nil {
			t.Errorf("stripe-mock's search result: %v", err)
			return nil, err
		}
		data, _ := page["data"].([]any)
		for _, item := range data {
			obj, ok := item.(map[string]any)
			if !ok {
				continue
			}
			metadata, _ := obj["metadata"].(map[string]any)
			if metadata == nil {
				metadata = map[string]any{}
			}
			metadata["op_key"] = opKey
			obj["metadata"] = metadata
		}
		body, err := json.Marshal(page)
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
		return resp, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startStripeMock builds stripe-mock at the version go.mod requires and
// starts it on a free loopback port, stopped when t ends. It returns its
// base URL. Failing to build or start it fails the test: a skipped shape
// check would pass silently.
func startStripeMock(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("stripe-mock: the go command is needed to build it: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "stripe-mock")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	build := exec.CommandContext(ctx, goCmd, "build", "-o", bin, "github.com/stripe/stripe-mock")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("stripe-mock: go build github.com/stripe/stripe-mock (a tool dependency in go.mod; `go get -tool github.com/stripe/stripe-mock@v0.203.0` adds it) failed: %v\n%s", err, out)
	}

	// -https-addr too: without it stripe-mock also listens for HTTPS on
	// every interface, port 12112.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatalf("stripe-mock: start: %v", err)
	}
	w.Close()

	var (
		mu     sync.Mutex
		output strings.Builder
	)
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		scanner := bufio.NewScanner(r)
		for scanner.Scan() {
			line := scanner.Text()
			mu.Lock()
			output.WriteString(line + "\n")
			mu.Unlock()
			if a, ok := strings.CutPrefix(line, "Listening for HTTP at address: "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited
		<-done
		cmd.Wait() //nolint:errcheck // killed
	})

	select {
	case a := <-addr:
		return "http://" + a
	case <-done:
	case <-time.After(30 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("stripe-mock did not start listening within 30s; its output:\n%s", output.String())
	return ""
}
