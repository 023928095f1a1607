package providertest

import (
	"net/http"
	"testing"

	"github.com/sweeper/sweeper/providers"
)

// Env returns the providers.Env an adapter's New takes in a test: an
// environment that holds exactly vars, given as name, value pairs, and
// transport (a fake of the provider; http.DefaultTransport when nil)
// under the read-only check. Its logger discards.
func Env(transport http.RoundTripper, vars ...string) providers.Env {
	return providers.Env{Getenv: Vars(vars...), Transport: transport}
}

// Vars is a providers.Env's Getenv for an environment that holds exactly
// vars, given as name, value pairs.
func Vars(vars ...string) func(string) string {
	if len(vars)%2 != 0 {
		panic("providertest: vars are name, value pairs")
	}
	env := make(map[string]string, len(vars)/2)
	for i := 0; i < len(vars); i += 2 {
		env[vars[i]] = vars[i+1]
	}
	return func(k string) string { return env[k] }
}

// NewLookup builds kind's adapter for a test, named name, from kind's
// defaults edited by each of set in turn, which must then validate, and
// env. Any failure is fatal.
func NewLookup[C providers.Settings](t testing.TB, kind providers.Kind, name string, env providers.Env, set ...func(C)) providers.Lookup {
	t.Helper()
	cfg := settings[C](t, kind)
	for _, s := range set {
		s(cfg)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	lookup, err := kind.New(name, cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	return lookup
}
