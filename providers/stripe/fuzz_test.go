package stripe_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/stripe"
)

// FuzzSearchPage: whatever Stripe answers with 200 to a search, the
// adapter does not panic and sends nothing; it either fails or returns
// records that each have an id, and only when the body is a search_result
// with a data array of objects and a boolean has_more (anything else is a
// failed lookup, never "found none"). The same body read again gives the
// same answer.
func FuzzSearchPage(f *testing.F) {
	const opKey = "order-1234-charge"
	for _, seed := range []struct {
		body    string
		charges bool
	}{
		{searchResult("/v1/payment_intents/search", ""), false},
		{searchResult("/v1/payment_intents/search", "", paymentIntent("pi_3Nx1", opKey, map[string]any{"customer": "cus_Q1", "currency": "USD"})), false},
		{searchResult("/v1/payment_intents/search", "",
			paymentIntent("pi_3Nx1", opKey, nil),
			paymentIntent("pi_3Nx2", "ORDER-1234-CHARGE", nil),
			object("payment_intent", "pi_3Nx3", opKey, 1299, "canceled", nil),
			object("payment_intent", "pi_3Nx4", opKey, 0, "succeeded", map[string]any{"currency": ""})), false},
		{searchResult("/v1/charges/search", "", charge("ch_3Nx1", opKey, map[string]any{"payment_intent": "pi_3Nx1"})), true},
		// A page that points to itself: has_more without a new next_page.
		{searchResult("/v1/charges/search", "page_2", charge("ch_3Nx1", opKey, nil)), true},
		{searchResult("/v1/payment_intents/search", "", charge("ch_3Nx1", opKey, nil)), false},
		{`{"object":"search_result","data":[{"object":"payment_intent","id":""}],"has_more":false}`, false},
		{`{"object":"search_result","data":[{"object":"payment_intent","id":" "}],"has_more":false}`, false},
		{`{"object":"search_result","data":[{"object":"charge","id":"ch_1","created":-1,"amount":-5,"currency":"x\u0000"}],"has_more":false}`, true},
		{`{"object":"search_result","data":[{"object":"payment_intent","id":"pi_1","amount":"12.99"}],"has_more":false}`, false},
		{`{"object":"search_result","data":[],"has_more":true,"next_page":""}`, false},
		{`{"object":"search_result","data":null,"has_more":false}`, false},
		{`{"object":"search_result","data":[],"has_more":false} {"object":"search_result","data":[{"id":"pi_1"}],"has_more":false}`, false},
		{`{"object":"list","data":[],"has_more":false}`, false},
		{`{"OBJECT":"search_result","DATA":[],"has_more":false}`, false},
		{`{"object":"search_result","data":[],"data":[{"id":"pi_1","object":"payment_intent","amount":1299,"currency":"usd","status":"succeeded","metadata":{"op_key":"order-1234-charge"}}],"has_more":false}`, false},
		{`{"object":"search_result","data":[{"id":"pi_1","object":"payment_intent","amount":1,"Amount":1299,"currency":"usd","status":"succeeded","metadata":{"op_key":"order-1234-charge"}}],"has_more":false}`, false},
		{`{"object":"search_result","data":[{"ID":"pi_1","object":"payment_intent","amount":1299,"currency":"usd","status":"succeeded","metadata":{"OP_KEY":"order-1234-charge"}}],"has_more":false}`, false},
		{`{"object":"search_result","data":[{"id":"pi_1","object":"payment_intent","amount":1299,"currency":"usd","status":"succeeded","metadata":{"op_key":"x","op_\u212aey":"order-1234-charge"}}],"has_more":false}`, false},
		{`{"error":{"type":"api_error","message":"boom"}}`, false},
		{`{}`, false},
		{`null`, false},
		{`<html><body>502 Bad Gateway</body></html>`, true},
		{``, false},
	} {
		f.Add([]byte(seed.body), seed.charges)
	}
	f.Fuzz(func(t *testing.T, page []byte, charges bool) {
		cfg := stripe.Kind.NewSettings().(*stripe.Config)
		cfg.APIBase, cfg.SecretKeyEnv = "https://api.stripe.test", "STRIPE_KEY"
		cfg.Objects = []string{stripe.ObjectPaymentIntents}
		if charges {
			cfg.Objects = []string{stripe.ObjectCharges}
		}
		var nonGET atomic.Int64
		a, err := stripe.New("payments", cfg, providertest.Env(providertest.FixedBody{Body: page, NonGET: &nonGET, Header: http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_fuzz"}}}, "STRIPE_KEY", testKey))
		if err != nil {
			t.Fatal(err)
		}
		q := query(opKey, time.Hour)
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: q, Writes: &nonGET, Hidden: []string{testKey, testRecipient}, Body: page,
			Accept: func(t *testing.T, records []providers.Record) {
				var top map[string]json.RawMessage
				if json.Unmarshal(page, &top) != nil || top == nil {
					t.Fatalf("body %q is not a JSON object, yet Lookup = %v, nil", page, records)
				}
				var object string
				if json.Unmarshal(top["object"], &object) != nil || object != "search_result" {
					t.Fatalf("body %q is not a search_result, yet Lookup = %v, nil", page, records)
				}
				var data []map[string]any
				if json.Unmarshal(top["data"], &data) != nil || data == nil {
					t.Fatalf("body %q has no data array of objects, yet Lookup = %v, nil", page, records)
				}
				var hasMore bool
				if json.Unmarshal(top["has_more"], &hasMore) != nil {
					t.Fatalf("body %q has no boolean has_more, yet Lookup = %v, nil", page, records)
				}
				if len(records) > len(data) {
					t.Errorf("%d records from %d objects", len(records), len(data))
				}
				for i, r := range records {
					if strings.Contains(r.Excerpt, "@") {
						t.Errorf("record %d's excerpt carries an email: %q", i, r.Excerpt)
					}
				}
			},
		})
	})
}

// FuzzInvoiceListPage: whatever Stripe answers with 200 to an invoice
// list (GET /v1/invoices, the operation's recipient a customer id), the
// adapter does not panic and sends nothing but GETs; it fails, or returns
// records only when the body is a list (not a search result) with a data
// array of objects, a boolean has_more and no next_page.
func FuzzInvoiceListPage(f *testing.F) {
	const opKey = "order-1234-invoice"
	for _, seed := range []string{
		invoiceList(false),
		invoiceList(false, invoice("in_1", opKey, "paid", nil)),
		invoiceList(false, invoice("in_1", opKey, "draft", nil), invoice("in_2", opKey, "void", nil), invoice("in_3", "ORDER-1234-INVOICE", "open", nil)),
		invoiceList(true, invoice("in_1", opKey, "paid", nil)),
		invoiceList(true),
		invoiceList(false, invoice("in_1", opKey, "uncollectible", map[string]any{"customer": map[string]any{"id": "cus_Q1", "object": "customer"}})),
		`{"object":"list","data":[],"has_more":false,"next_page":"p2"}`,
		`{"object":"list","data":[{"object":"invoice","id":"in_1","total":"42"}],"has_more":false}`,
		`{"object":"list","data":[{"object":"invoice","id":"in_1","status":"paid","metadata":{"op_key":"a","OP_KEY":"order-1234-invoice"}}],"has_more":false}`,
		`{"object":"search_result","data":[],"has_more":false,"next_page":null}`,
		`{"object":"list","data":null,"has_more":false}`,
		`{"object":"list","data":[],"has_more":false,"DATA":[{"id":"in_1"}]}`,
		`{}`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		cfg := stripe.Kind.NewSettings().(*stripe.Config)
		cfg.APIBase, cfg.SecretKeyEnv = "https://api.stripe.test", "STRIPE_KEY"
		cfg.Objects = []string{stripe.ObjectInvoices}
		var nonGET atomic.Int64
		a, err := stripe.New("invoices", cfg, providertest.Env(providertest.FixedBody{Body: page, NonGET: &nonGET, Header: http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_fuzz"}}}, "STRIPE_KEY", testKey))
		if err != nil {
			t.Fatal(err)
		}
		q := customerQuery(opKey, time.Hour)
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: q, Writes: &nonGET, Hidden: []string{testKey, testRecipient}, Body: page,
			Accept: func(t *testing.T, records []providers.Record) {
				var top map[string]json.RawMessage
				if json.Unmarshal(page, &top) != nil || top == nil {
					t.Fatalf("body %q is not a JSON object, yet Lookup = %v, nil", page, records)
				}
				var object string
				if json.Unmarshal(top["object"], &object) != nil || object != "list" {
					t.Fatalf("body %q is not a list, yet Lookup = %v, nil", page, records)
				}
				if _, ok := top["next_page"]; ok {
					t.Fatalf("body %q has a next_page, yet Lookup = %v, nil", page, records)
				}
				var data []map[string]any
				if json.Unmarshal(top["data"], &data) != nil || data == nil {
					t.Fatalf("body %q has no data array of objects, yet Lookup = %v, nil", page, records)
				}
				if len(records) > len(data) {
					t.Errorf("%d records from %d objects", len(records), len(data))
				}
				for _, r := range records {
					if r.ID == "" || strings.Contains(r.Excerpt, "@") {
						t.Errorf("record %+v", r)
					}
				}
			},
		})
	})
}
