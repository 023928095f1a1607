package quickbooks_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/quickbooks"
)

// FuzzQueryAnswer: whatever QuickBooks answers with 200 to the query, the
// adapter does not panic and sends nothing but GETs; it either fails or
// returns dated records, no more than the answer's invoices, and only when
// the body is a QueryResponse object.
func FuzzQueryAnswer(f *testing.F) {
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	for _, seed := range [][]byte{
		answer(1),
		answer(1, inv{ID: "1", DocNumber: "op-1", Total: 5, Created: at}),
		answer(1, inv{ID: "1", DocNumber: "op-1", Voided: true, Created: at}, inv{ID: "2", DocNumber: "OP-1", Total: 5, Created: at}),
		[]byte(`{"QueryResponse":{"Invoice":[],"Invoice":[{"Id":"1"}],"startPosition":1,"maxResults":1},"time":"x"}`),
		[]byte(`{"QueryResponse":{"Invoice":[{"Id":"1","DocNumber":"op-1","TotalAmt":0,"Balance":0,"PrivateNote":"Voided","MetaData":{"CreateTime":"2026-12-04T01:00:00-08:00"}}],"startPosition":1,"maxResults":1},"time":"x"}`),
		[]byte(`{"Fault":{"Error":[{"Message":"m","Detail":"d","code":"4000"}],"type":"QueryParserError"},"time":"x"}`),
		[]byte(`null`),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		cfg := quickbooks.Kind.NewSettings().(*quickbooks.Config)
		cfg.RealmID, cfg.AccessTokenEnv, cfg.APIBase = realmID, "QBO_TOKEN", "https://quickbooks.test"
		var nonGET atomic.Int64
		a, err := quickbooks.New("invoices", cfg, providertest.Env(providertest.FixedBody{Body: page, NonGET: &nonGET}, "QBO_TOKEN", token))
		if err != nil {
			t.Fatal(err)
		}
		q := providertest.Query()
		q.OpKey = "op-1"
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: q, Writes: &nonGET, Hidden: []string{token, q.Recipient}, Body: page,
			Accept: func(t *testing.T, records []providers.Record) {
				var top struct {
					QueryResponse *struct {
						Invoice []json.RawMessage `json:"Invoice"`
					} `json:"QueryResponse"`
				}
				if json.Unmarshal(page, &top) != nil || top.QueryResponse == nil {
					t.Fatalf("body %q is no query answer, yet Lookup = %v, nil", page, records)
				}
				if len(records) > len(top.QueryResponse.Invoice) {
					t.Errorf("%d records from %d invoices", len(records), len(top.QueryResponse.Invoice))
				}
				for _, r := range records {
					if r.CreatedAt.IsZero() || (r.State != providers.StateEffect && r.State != providers.StateFailed) {
						t.Errorf("record %+v", r)
					}
				}
			},
		})
	})
}
