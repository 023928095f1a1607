package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/ledger"
)

// fakeMessagingProvider is shaped like a messaging API: POST /messages sends
// (the side effect sweeper must never cause), GET /lookup answers the
// generic lookup protocol from what was sent.
type fakeMessagingProvider struct {
	sends, lookups, other atomic.Int64
	hashes                map[string]string // op_key -> payload hash of the sent message
}

func (f *fakeMessagingProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/messages":
		f.sends.Add(1)
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodGet && r.URL.Path == "/lookup":
		f.lookups.Add(1)
		key := r.URL.Query().Get("op_key")
		matches := []map[string]string{}
		switch {
		case strings.HasPrefix(key, "sent-"):
			// Sent a minute ago — after the operation's first attempt,
			// before the lookup's window ends however late the lookup
			// runs on a loaded machine.
			matches = append(matches, map[string]string{"id": "msg_" + key, "created_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
				"recipient": r.URL.Query().Get("recipient"), "payload_hash": f.hashes[key]})
		case strings.HasPrefix(key, "down-"):
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"matches": matches})
	default:
		f.other.Add(1)
		http.NotFound(w, r)
	}
}

// TestNeverSendsAtAProvider (I1): a sweep over operations of every outcome,
// against a provider that can send, sends nothing: every request it gets is
// a lookup.
func TestNeverSendsAtAProvider(t *testing.T) {
	t.Parallel()
	fake := &fakeMessagingProvider{hashes: map[string]string{}}
	server := httptest.NewServer(fake)
	t.Cleanup(server.Close)

	cfg := baseConfig + fmt.Sprintf(`
[providers.messages]
kind = "http"
url = %q
stale_after = "10m"
lookup_timeout = "1s"
lookup_budget = "2s"
rate_limit = 1000.0
concurrency = 20
`, server.URL+"/lookup")
	b := setup(t, cfg, nil)
	var keys []string
	for i := range 30 {
		key := fmt.Sprintf("%s-%d", []string{"sent", "lost", "down"}[i%3], i)
		op := b.claim(t, key, "messages", stale)
		fake.hashes[key] = op.PayloadHash
		keys = append(keys, key)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, keys, 60*time.Second)

	want := map[string]int{"done": 10, "not_found": 10, "lookup_failed": 10}
	if diff := cmp.Diff(want, b.outcomes(t)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if n := fake.sends.Load() + fake.other.Load(); n != 0 {
		t.Errorf("the provider received %d requests other than lookups", n)
	}
	if fake.lookups.Load() < 30 {
		t.Errorf("only %d lookups for 30 operations", fake.lookups.Load())
	}
	if op := b.status(t, "sent-0"); op.Status != ledger.StatusDone || op.ProviderRecordID != "msg_sent-0" {
		t.Errorf("sent-0 = %s %q", op.Status, op.ProviderRecordID)
	}
}
