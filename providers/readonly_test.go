package providers_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
)

// methodCounter is a provider that counts every request it receives, by
// method.
type methodCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *methodCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.counts[r.Method]++
	c.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (c *methodCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// closeTracker records whether a request body was closed.
type closeTracker struct {
	*strings.Reader
	closed bool
}

func (b *closeTracker) Close() error { b.closed = true; return nil }

func TestReadOnlyTransport(t *testing.T) {
	t.Parallel()

	tests := []struct {
		desc    string
		method  string
		base    bool // the server's own transport as Base, else nil (http.DefaultTransport)
		allowed bool
	}{
		{desc: "GET passes", method: http.MethodGet, base: true, allowed: true},
		{desc: "HEAD passes", method: http.MethodHead, base: true, allowed: true},
		{desc: "GET passes on the default transport", method: http.MethodGet, allowed: true},
		{desc: "POST refused", method: http.MethodPost, base: true},
		{desc: "PUT refused", method: http.MethodPut, base: true},
		{desc: "PATCH refused", method: http.MethodPatch, base: true},
		{desc: "DELETE refused", method: http.MethodDelete, base: true},
		{desc: "POST refused on the default transport", method: http.MethodPost},
		{desc: "OPTIONS refused", method: http.MethodOptions, base: true},
		{desc: "lower-case get refused", method: "get", base: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			counter := &methodCounter{counts: map[string]int{}}
			srv := httptest.NewServer(counter)
			t.Cleanup(srv.Close)
			transport := providers.ReadOnlyTransport{}
			if tt.base {
				transport.Base = srv.Client().Transport
			} else {
				t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
			}
			client := &http.Client{Transport: transport}

			body := &closeTracker{Reader: strings.NewReader(`{"to":"jane.doe@example.com"}`)}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+"/messages", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if resp != nil {
				resp.Body.Close()
			}

			want := map[string]int{}
			if tt.allowed {
				want[tt.method] = 1
				if err != nil {
					t.Errorf("%s: %v, want it to pass", tt.method, err)
				}
			} else {
				if err == nil {
					t.Fatalf("%s: no error, want it refused", tt.method)
				}
				if class, _ := providers.Classify(err); class != providers.ClassPermanent {
					t.Errorf("%s: error %v is %s, want permanent", tt.method, err, class)
				}
				if !body.closed {
					t.Errorf("%s: refused request's body not closed", tt.method)
				}
			}
			if diff := cmp.Diff(want, counter.snapshot()); diff != "" {
				t.Errorf("requests reaching the server by method (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadOnlyTransportSearches: a search endpoint an adapter declares —
// a POST that only reads — passes only when the request is exactly it:
// method, https, host, path and no query string. Anything near it, and
// every other method, is refused before it leaves the process.
func TestReadOnlyTransportSearches(t *testing.T) {
	t.Parallel()
	counter := &methodCounter{counts: map[string]int{}}
	srv := httptest.NewTLSServer(counter)
	t.Cleanup(srv.Close)
	host := srv.Listener.Addr().String()
	search := providers.SearchEndpoint{Method: http.MethodPost, Host: host, Path: "/v3/logs"}

	tests := []struct {
		desc     string
		method   string
		url      string // relative to https://host unless absolute
		host     string // the request's Host field, when set
		searches []providers.SearchEndpoint
		allowed  bool
	}{
		{desc: "the declared search passes", method: http.MethodPost, url: "/v3/logs", searches: []providers.SearchEndpoint{search}, allowed: true},
		{desc: "GET still passes", method: http.MethodGet, url: "/v3/logs/abc", searches: []providers.SearchEndpoint{search}, allowed: true},
		{desc: "no declared search: POST refused", method: http.MethodPost, url: "/v3/logs"},
		{desc: "another path", method: http.MethodPost, url: "/v3/mail/send", searches: []providers.SearchEndpoint{search}},
		{desc: "a path below it", method: http.MethodPost, url: "/v3/logs/abc", searches: []providers.SearchEndpoint{search}},
		{desc: "a trailing slash", method: http.MethodPost, url: "/v3/logs/", searches: []providers.SearchEndpoint{search}},
		{desc: "another letter case", method: http.MethodPost, url: "/v3/LOGS", searches: []providers.SearchEndpoint{search}},
		{desc: "an escaped path", method: http.MethodPost, url: "/v3/%6Cogs", searches: []providers.SearchEndpoint{search}},
		{desc: "a dot segment", method: http.MethodPost, url: "/v3/mail/../logs", searches: []providers.SearchEndpoint{search}},
		{desc: "a query string", method: http.MethodPost, url: "/v3/logs?x=1", searches: []providers.SearchEndpoint{search}},
		{desc: "plain http", method: http.MethodPost, url: "http://" + host + "/v3/logs", searches: []providers.SearchEndpoint{search}},
		{desc: "another host", method: http.MethodPost, url: "https://localhost:1/v3/logs", searches: []providers.SearchEndpoint{search}},
		{desc: "a Host header naming another host", method: http.MethodPost, url: "/v3/logs", host: "api.example.com", searches: []providers.SearchEndpoint{search}},
		{desc: "credentials in the URL", method: http.MethodPost, url: "https://user:pass@" + host + "/v3/logs", searches: []providers.SearchEndpoint{search}},
		{desc: "PUT to the search path", method: http.MethodPut, url: "/v3/logs", searches: []providers.SearchEndpoint{search}},
		{desc: "lower-case post", method: "post", url: "/v3/logs", searches: []providers.SearchEndpoint{search}},
		{desc: "a declared PUT allows nothing", method: http.MethodPut, url: "/v3/logs",
			searches: []providers.SearchEndpoint{{Method: http.MethodPut, Host: host, Path: "/v3/logs"}}},
		{desc: "a declared DELETE allows nothing", method: http.MethodDelete, url: "/v3/logs",
			searches: []providers.SearchEndpoint{{Method: http.MethodDelete, Host: host, Path: "/v3/logs"}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			before := counter.snapshot()
			client := &http.Client{Transport: providers.ReadOnlyTransport{Base: srv.Client().Transport, Searches: tt.searches}}
			target := tt.url
			if strings.HasPrefix(target, "/") {
				target = "https://" + host + target
			}
			body := &closeTracker{Reader: strings.NewReader(`{"query":"to_email = \"jane.doe@example.com\""}`)}
			req, err := http.NewRequestWithContext(t.Context(), tt.method, target, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := client.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			after := counter.snapshot()
			reached := after[tt.method] - before[tt.method]
			if tt.allowed {
				if err != nil || reached != 1 {
					t.Errorf("%s %s: %v, %d request(s) reached the server; want it to pass", tt.method, tt.url, err, reached)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s %s: no error, want it refused", tt.method, tt.url)
			}
			if class, _ := providers.Classify(err); class != providers.ClassPermanent {
				t.Errorf("error %v is %s, want permanent", err, class)
			}
			if !body.closed {
				t.Error("refused request's body not closed")
			}
			if reached != 0 {
				t.Errorf("%d refused request(s) reached the server", reached)
			}
		})
	}
}

func TestEnvRoundTripper(t *testing.T) {
	t.Parallel()
	if got := (providers.Env{}).RoundTripper(); got != http.DefaultTransport {
		t.Errorf("RoundTripper without a Transport = %v; want http.DefaultTransport", got)
	}
	fake := &http.Transport{}
	if got := (providers.Env{Transport: fake}).RoundTripper(); got != fake {
		t.Errorf("RoundTripper = %v; want the Env's Transport", got)
	}
}
