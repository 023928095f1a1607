package xero_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/xero"
)

// TestRecordNamespace: the namespace is the tenant, once GET /connections
// shows the token opens it; a token that does not open it, or an answer
// that is not a list of connections, is an error, never a namespace.
func TestRecordNamespace(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	ns, err := newAdapter(t, srv.URL).RecordNamespace(t.Context())
	if err != nil || ns != "xero:"+tenant {
		t.Errorf("RecordNamespace = %q, %v", ns, err)
	}
	if f.writes.Load() != 0 || f.pages.Load() != 0 {
		t.Errorf("writes %d, pages %d", f.writes.Load(), f.pages.Load())
	}
	for _, body := range []string{`[]`, `[{"tenantId":"00000000-0000-4000-8000-000000000000"}]`, `{}`, `null`, `[{"tenantId":"` + tenant + `","tenantid":"x"}]`} {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) }) //nolint:errcheck // a test's answer
		if ns, err := newAdapter(t, srv.URL).RecordNamespace(t.Context()); err == nil {
			t.Errorf("%s: RecordNamespace = %q, want an error", body, ns)
		}
	}
	srv401 := newServer(t, func(w http.ResponseWriter, _ *http.Request) { xeroError(w, 401, "Unauthorized") })
	_, err = newAdapter(t, srv401.URL).RecordNamespace(t.Context())
	if class, _ := providers.Classify(err); class != providers.ClassPermanent || strings.Contains(err.Error(), token) {
		t.Errorf("401: %v (%s)", err, class)
	}
}

func TestAccountHint(t *testing.T) {
	t.Parallel()
	if h := (&xero.Config{TenantID: tenant}).AccountHint(nil); h != "xero:"+tenant {
		t.Errorf("hint %q", h)
	}
	if h := (&xero.Config{}).AccountHint(nil); h != "" {
		t.Errorf("hint %q without a tenant", h)
	}
}
