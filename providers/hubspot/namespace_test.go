package hubspot_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/hubspot"
)

// TestRecordNamespace: the namespace is the portal the token opens, read
// with one GET; an answer without a portalId is an error, never a
// namespace, and the token does not show.
func TestRecordNamespace(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t, "contacts")
	ns, err := newAdapter(t, srv.URL, "contacts").RecordNamespace(t.Context())
	if err != nil || ns != "hubspot:2519445" {
		t.Errorf("RecordNamespace = %q, %v", ns, err)
	}
	if f.writes.Load() != 0 || f.searches.Load() != 0 {
		t.Errorf("writes %d, searches %d", f.writes.Load(), f.searches.Load())
	}
	for _, body := range []string{`{}`, `{"portalId":0}`, `{"portalId":"2519445"}`, `{"portalId":1,"PortalId":2}`, `null`} {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) }) //nolint:errcheck // a test's answer
		if ns, err := newAdapter(t, srv.URL, "contacts").RecordNamespace(t.Context()); err == nil {
			t.Errorf("%s: RecordNamespace = %q, want an error", body, ns)
		}
	}
	srv401 := newServer(t, func(w http.ResponseWriter, _ *http.Request) { errorAnswer(w, 401, "INVALID_AUTHENTICATION") })
	_, err = newAdapter(t, srv401.URL, "contacts").RecordNamespace(t.Context())
	if class, _ := providers.Classify(err); class != providers.ClassPermanent || strings.Contains(err.Error(), token) {
		t.Errorf("401: %v (%s)", err, class)
	}
}

func TestAccountHint(t *testing.T) {
	t.Parallel()
	c := &hubspot.Config{AccessTokenEnv: "T"}
	a := c.AccountHint(func(k string) string { return map[string]string{"T": token}[k] })
	b := c.AccountHint(func(k string) string { return map[string]string{"T": token + "x"}[k] })
	if !strings.HasPrefix(a, "hubspot:token:") || a == b || strings.Contains(a, token) {
		t.Errorf("hints %q, %q", a, b)
	}
	if c.AccountHint(func(string) string { return "" }) != "" {
		t.Error("a hint without a token")
	}
}
