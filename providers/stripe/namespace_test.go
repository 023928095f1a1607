package stripe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/stripe"
)

// TestRecordNamespace: the secret key opens one Stripe account, read with
// one GET /v1/account; an answer that is not an account, or an error
// status, is an error, never a namespace.
func TestRecordNamespace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		status  int
		body    string
		want    string
		wantErr bool
	}{
		{desc: "the account", status: 200, body: `{"id":"acct_1Nv0FGQ9RKHgCVdK","object":"account","country":"US","type":"standard"}`, want: "stripe:acct_1Nv0FGQ9RKHgCVdK"},
		{desc: "not an account", status: 200, body: `{"id":"cus_1","object":"customer"}`, wantErr: true},
		{desc: "empty", status: 200, body: `{}`, wantErr: true},
		{desc: "bad key", status: 401, body: `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}`, wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/v1/account" || r.Header.Get("Authorization") != "Bearer sk_test_1" {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body)) //nolint:errcheck // the test reads what arrives
			}))
			defer srv.Close()
			a, err := stripe.New("payments", &stripe.Config{SecretKeyEnv: "STRIPE_KEY", APIBase: srv.URL}, providertest.Env(nil, "STRIPE_KEY", "sk_test_1"))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			var _ providers.RecordNamespacer = a
			got, err := a.RecordNamespace(context.Background())
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("RecordNamespace = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
