package httplookup_test

import (
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_TOKEN", secret)
			return providertest.NewLookup(t, httplookup.Kind, "kit", env, func(c *httplookup.Config) {
				c.URL, c.TokenEnv = baseURL+"/lookup", "KIT_TOKEN"
			})
		},
		Empty:   []byte(`{"matches":[]}`),
		Found:   []byte(`{"matches":[{"id":"rec_1","created_at":"2026-11-29T10:00:00Z","payload_hash":"` + "ab" + `"}]}`),
		FoundID: "rec_1",
	})
}
