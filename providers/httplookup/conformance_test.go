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
			getenv := func(k string) string {
				if k == "KIT_TOKEN" {
					return secret
				}
				return ""
			}
			env.Getenv = getenv
			lookup, err := httplookup.Kind.New("kit", &httplookup.Config{URL: baseURL + "/lookup", TokenEnv: "KIT_TOKEN"}, env)
			if err != nil {
				t.Fatal(err)
			}
			return lookup
		},
		Empty:   []byte(`{"matches":[]}`),
		Found:   []byte(`{"matches":[{"id":"rec_1","created_at":"2026-11-29T10:00:00Z","payload_hash":"` + "ab" + `"}]}`),
		FoundID: "rec_1",
	})
}
