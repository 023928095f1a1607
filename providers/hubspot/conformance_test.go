package hubspot_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/hubspot"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	found := crmRecord{
		ID: "90210", Created: q.FirstAttemptAt.Add(1500),
		Props: map[string]string{"op_key": q.OpKey, "email": providertest.Recipient},
	}
	page := func(recs ...crmRecord) []byte {
		results := []map[string]any{}
		for _, r := range recs {
			results = append(results, r.json())
		}
		b, err := json.Marshal(map[string]any{"total": len(recs), "results": results})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_HUBSPOT_TOKEN", secret)
			return providertest.NewLookup(t, hubspot.Kind, "kit", env, func(c *hubspot.Config) {
				c.AccessTokenEnv, c.APIBase, c.Object = "KIT_HUBSPOT_TOKEN", baseURL, hubspot.ObjectContacts
				c.ApplyDefaults()
			})
		},
		Searches: []string{"POST /crm/v3/objects/contacts/search"},
		Empty:    page(),
		Found:    page(found),
		FoundID:  found.ID,
		ErrorBody: func(status int) []byte {
			return fmt.Appendf(nil, `{"status":"error","message":"HTTP %d for %s with %s","correlationId":"aa","category":"SOMETHING"}`, status, providertest.Recipient, providertest.Secret)
		},
	})
}
