package stripe_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/stripe"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = func(k string) string {
				if k == "KIT_STRIPE_KEY" {
					return secret
				}
				return ""
			}
			cfg := stripe.Kind.NewSettings().(*stripe.Config)
			cfg.SecretKeyEnv = "KIT_STRIPE_KEY"
			cfg.APIBase = baseURL
			// The kit's first attempt was 2h ago; a short window keeps its
			// "zero records" control an empty result.
			if errs := cfg.Validate(); len(errs) > 0 {
				t.Fatal(errs)
			}
			lookup, err := stripe.Kind.New("kit", cfg, env)
			if err != nil {
				t.Fatal(err)
			}
			return lookup
		},
		Empty: []byte(`{"object":"search_result","url":"/v1/payment_intents/search","has_more":false,"next_page":null,"data":[]}`),
		Found: []byte(`{"object":"search_result","url":"/v1/payment_intents/search","has_more":false,"next_page":null,"data":[` +
			`{"id":"pi_kit_1","object":"payment_intent","amount":1299,"currency":"usd","status":"succeeded","created":1764410400,` +
			`"customer":null,"receipt_email":"` + providertest.Recipient + `","metadata":{"op_key":"` + q.OpKey + `"}}]}`),
		FoundID: "pi_kit_1",
		ErrorBody: func(status int) []byte {
			typ := "invalid_request_error"
			if status >= 500 {
				typ = "api_error"
			}
			return fmt.Appendf(nil, `{"error":{"type":%q,"message":"%s (key %s)"}}`, typ, http.StatusText(status), providertest.Secret)
		},
	})
}
