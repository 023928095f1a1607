// Package providers is sweeper's extension point: the kinds of lookup
// adapter a [providers.NAME] config block can name, and (with the sweep) the
// lookup interface they implement. Each adapter lives in a sub-package and
// is wired in by the explicit list in providers/kinds; nothing registers
// itself.
//
// Adapters look things up and nothing else: sweeper never performs a
// provider's side effect (docs/architecture.md, I1).
package providers

import (
	"fmt"
	"log/slog"
	"time"
)

// Settings is the kind-specific part of a [providers.NAME] block, decoded
// from the same TOML table as the common keys (kind, stale_after, …).
type Settings interface {
	// Validate returns one error per problem. Each message starts with the
	// key it concerns, relative to the block: "url: required".
	Validate() []error
}

// SecretEnv names an environment variable a provider block reads a
// credential from. The value never appears in config text, output or logs.
type SecretEnv struct {
	Key      string // the config key that names the variable, e.g. "token_env"
	Name     string // the variable, e.g. "ORDERS_LOOKUP_TOKEN"
	Required bool   // a missing value is a configuration error
}

// SecretHolder is implemented by settings that read credentials.
type SecretHolder interface {
	SecretEnvs() []SecretEnv
}

// Kind is one kind of adapter, as named by a block's kind key.
type Kind struct {
	// Name is the value of the kind key, e.g. "http".
	Name string
	// NewSettings returns settings holding the kind's defaults; the block is
	// decoded over them. Must return a pointer.
	NewSettings func() Settings
	// New builds the adapter for the block named name from its validated
	// settings.
	New func(name string, s Settings, env Env) (Lookup, error)
	// SettleWindow is the kind's default settle_window: how long after an
	// operation's first attempt its provider's search may still miss a
	// record it holds (an index that lags). Zero for a search that is
	// current.
	SettleWindow time.Duration
}

// WithSettleWindow returns k with d as its default settle_window.
func (k Kind) WithSettleWindow(d time.Duration) Kind {
	k.SettleWindow = d
	return k
}

// Env is what an adapter may take from the process.
type Env struct {
	// Getenv reads the environment (credentials named by *_env keys).
	Getenv func(string) string
	// Logger is already scoped to the provider.
	Logger *slog.Logger
}

// NewKind describes an adapter whose settings are a *C: it checks the
// settings' type once, here, and gives build a non-nil Getenv, so adapters
// need neither check.
func NewKind[C Settings](name string, newSettings func() C, build func(name string, cfg C, env Env) (Lookup, error)) Kind {
	return Kind{
		Name:        name,
		NewSettings: func() Settings { return newSettings() },
		New: func(blockName string, s Settings, env Env) (Lookup, error) {
			cfg, ok := s.(C)
			if !ok {
				return nil, fmt.Errorf("%s: settings are %T", name, s)
			}
			if env.Getenv == nil {
				env.Getenv = func(string) string { return "" }
			}
			return build(blockName, cfg, env)
		},
	}
}
