package quickbooks_test

import (
	"context"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/quickbooks"
)

// TestRecordNamespace: the namespace is the realm, once one GET of the
// company answers with its Id; another company's answer, or none, is an
// error, never a namespace.
func TestRecordNamespace(t *testing.T) {
	t.Parallel()
	_, srv := newCompany(t)
	a := adapter(t, srv)
	var _ providers.RecordNamespacer = a
	if got, err := a.RecordNamespace(context.Background()); err != nil || got != "quickbooks:"+realmID {
		t.Errorf("RecordNamespace = %q, %v", got, err)
	}
	for _, body := range []string{`{"CompanyInfo":{"Id":"1"},"time":"x"}`, `{"time":"x"}`, `{"CompanyInfo":{"Id":"1","Id":"` + realmID + `"}}`} {
		if got, err := adapter(t, serve(t, body)).RecordNamespace(context.Background()); err == nil {
			t.Errorf("%s: RecordNamespace = %q, nil; want an error", body, got)
		}
	}
	if hint := (&quickbooks.Config{RealmID: realmID}).AccountHint(nil); hint != "quickbooks:"+realmID {
		t.Errorf("AccountHint = %q", hint)
	}
}
