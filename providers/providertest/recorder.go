package providertest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Recorder is the bookkeeping an adapter's fake provider shares with the
// others: the requests it received, in the form the fake notes them (S),
// and how many could have written — sent, changed, deleted — which must be
// none (I1). A fake embeds it and starts its server with [Recorder.Serve].
type Recorder[S any] struct {
	writes atomic.Int64

	mu   sync.Mutex
	reqs []S
}

// Note records one request the fake received.
func (r *Recorder[S]) Note(s S) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, s)
}

// Wrote counts a request that could have written: one that is not a GET,
// nor a search the adapter declares.
func (r *Recorder[S]) Wrote() { r.writes.Add(1) }

// Requests returns the requests noted so far.
func (r *Recorder[S]) Requests() []S {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]S(nil), r.reqs...)
}

// Serve starts an httptest server running handler, closed at t's cleanup,
// which then fails t if the fake of provider counted a request that could
// have written.
func (r *Recorder[S]) Serve(t *testing.T, provider string, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		srv.Close()
		if n := r.writes.Load(); n != 0 {
			t.Errorf("I1: %s received %d request(s) that could have written", provider, n)
		}
	})
	return srv
}
