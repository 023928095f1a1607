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
