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
			env.Getenv = providertest.Vars("KIT_STRIPE_KEY", secret)
			return providertest.NewLookup(t, stripe.Kind, "kit", env, func(c *stripe.Config) {
				c.SecretKeyEnv = "KIT_STRIPE_KEY"
				c.APIBase = baseURL
			})
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
