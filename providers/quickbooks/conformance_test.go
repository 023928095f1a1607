package quickbooks_test

import (
	"fmt"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/quickbooks"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_QBO_TOKEN", secret)
			return providertest.NewLookup(t, quickbooks.Kind, "kit", env, func(c *quickbooks.Config) {
				c.RealmID, c.AccessTokenEnv, c.APIBase = realmID, "KIT_QBO_TOKEN", baseURL
			})
		},
		// QuickBooks nests its records (QueryResponse.Invoice), which the
		// kit's key-variant bodies do not reach: Found is left out here and
		// TestStrictDecoding tries those bodies one level down.
		Empty: answer(1),
		ErrorBody: func(status int) []byte {
			return fmt.Appendf(nil, `{"Fault":{"Error":[{"Message":"%s","Detail":"%s for %s","code":"%d"}],"type":"ValidationFault"},"time":"2026-12-04T08:00:00.000-08:00"}`,
				providertest.Recipient, providertest.Secret, providertest.Recipient, status)
		},
	})
}
