package xero_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/xero"
)

// fixedAnswer answers every request with 200 and one body, without a
// network, and counts what could write: anything but a GET.
type fixedAnswer struct {
	body   []byte
	writes *atomic.Int64
}

func (f fixedAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	if r.Method != http.MethodGet {
		f.writes.Add(1)
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)), Request: r,
	}, nil
}

// FuzzInvoicesPage: whatever Xero answers with 200, the adapter does not
// panic and writes nothing; it either fails or returns records that each
// are an invoice whose Reference is the op_key exactly, and only when the
// body is one JSON object with an Invoices array.
func FuzzInvoicesPage(f *testing.F) {
	hit := `{"InvoiceID":"243216c5-369e-4056-ac67-000000000001","Reference":"` + opKey + `","Status":"PAID","Total":1.5,"CurrencyCode":"NZD","Contact":{"ContactID":"c","EmailAddress":"a@example.com"},"UpdatedDateUTC":"/Date(1773151202000+0000)/"}`
	for _, seed := range []string{
		`{"Invoices":[]}`,
		`{"Id":"x","Status":"OK","ProviderName":"p","DateTimeUTC":"/Date(1)/","Invoices":[` + hit + `]}`,
		`{"Invoices":[` + hit + `],"pagination":{"page":1,"pageSize":100,"pageCount":2,"itemCount":101}}`,
		`{"Invoices":[{"InvoiceID":"243216c5-369e-4056-ac67-000000000001","Reference":"WF-42-SEND-INVOICE","Status":"VOIDED","UpdatedDateUTC":"/Date(1773151202000)/"}]}`,
		`{"Invoices":[],"Invoices":[` + hit + `]}`,
		`{"Invoices":[]} {}`,
		`{"Title":"x","Status":429}`,
		`{}`, `null`, `<html>502</html>`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cfg := xero.Kind.NewSettings().(*xero.Config)
		cfg.AccessTokenEnv, cfg.TenantID = "XERO_TOKEN", tenant
		var writes atomic.Int64
		a, err := xero.New("books", cfg, providertest.Env(fixedAnswer{body: body, writes: &writes}, "XERO_TOKEN", token))
		if err != nil {
			t.Fatal(err)
		}
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: query, Writes: &writes, Hidden: []string{token, recipient}, Body: body,
			Accept: func(t *testing.T, records []providers.Record) {
				var top struct {
					Invoices []struct {
						Reference string `json:"Reference"`
					} `json:"Invoices"`
				}
				if json.Unmarshal(body, &top) != nil || top.Invoices == nil {
					t.Fatalf("body %q has no Invoices array, yet Lookup = %v, nil", body, records)
				}
				keyed := 0
				for _, i := range top.Invoices {
					if i.Reference == opKey {
						keyed++
					}
				}
				// A full page asks the same body again: records may repeat
				// and are merged, never more than the keyed invoices.
				if len(records) > keyed {
					t.Errorf("%d records from %d invoices holding the op_key", len(records), keyed)
				}
				for i, r := range records {
					if r.CreatedAt.IsZero() {
						t.Errorf("record %d has no date", i)
					}
				}
			},
		})
	})
}
