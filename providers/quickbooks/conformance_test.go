package quickbooks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/quickbooks"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	found := inv{ID: "1042", DocNumber: q.OpKey, Email: providertest.Recipient, Created: q.FirstAttemptAt.Add(time.Second), Total: 42}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_QBO_TOKEN", secret)
			return providertest.NewLookup(t, quickbooks.Kind, "kit", env, func(c *quickbooks.Config) {
				c.RealmID, c.AccessTokenEnv, c.APIBase = realmID, "KIT_QBO_TOKEN", baseURL
			})
		},
		// QuickBooks nests its records: the kit's key variants are
		// written in QueryResponse, beside Invoice.
		Empty:     answer(1),
		Found:     answer(1, found),
		FoundID:   found.ID,
		RecordsAt: []string{"QueryResponse", "Invoice"},
		ErrorBody: func(status int) []byte {
			return fmt.Appendf(nil, `{"Fault":{"Error":[{"Message":"%s","Detail":"%s for %s","code":"%d"}],"type":"ValidationFault"},"time":"2026-12-04T08:00:00.000-08:00"}`,
				providertest.Recipient, providertest.Secret, providertest.Recipient, status)
		},
	})
}
