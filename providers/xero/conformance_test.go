package xero_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/xero"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	found := inv{ID: "243216c5-369e-4056-ac67-05b4b0f0c0de", Number: "INV-0042", Reference: q.OpKey, Status: "AUTHORISED", Updated: q.FirstAttemptAt.Add(1500)}
	page := func(invs ...inv) []byte {
		list := []map[string]any{}
		for _, i := range invs {
			m := i.json()
			m["Contact"] = map[string]any{"ContactID": "5b96e86b-418e-48e8-8949-308c14aec278", "EmailAddress": providertest.Recipient}
			list = append(list, m)
		}
		b, err := json.Marshal(map[string]any{"Id": "1", "Status": "OK", "ProviderName": "kit", "DateTimeUTC": "/Date(1773151200000)/", "Invoices": list})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_XERO_TOKEN", secret)
			return providertest.NewLookup(t, xero.Kind, "kit", env, func(c *xero.Config) {
				c.AccessTokenEnv, c.APIBase, c.TenantID = "KIT_XERO_TOKEN", baseURL, tenant
			})
		},
		Empty:   page(),
		Found:   page(found),
		FoundID: found.ID,
		ErrorBody: func(status int) []byte {
			return fmt.Appendf(nil, `{"Title":"HTTP %d","Status":%d,"Detail":"for %s with %s"}`, status, status, providertest.Recipient, providertest.Secret)
		},
	})
}
