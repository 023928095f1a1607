package providertest

import (
	"net/http"

	"github.com/sweeper/sweeper/providers"
)

// Env returns the providers.Env an adapter's New takes in a test: an
// environment that holds exactly vars, given as name, value pairs, and
// transport (a fake of the provider; http.DefaultTransport when nil)
// under the read-only check. Its logger discards.
func Env(transport http.RoundTripper, vars ...string) providers.Env {
	if len(vars)%2 != 0 {
		panic("providertest.Env: vars are name, value pairs")
	}
	env := make(map[string]string, len(vars)/2)
	for i := 0; i < len(vars); i += 2 {
		env[vars[i]] = vars[i+1]
	}
	return providers.Env{Getenv: func(k string) string { return env[k] }, Transport: transport}
}
