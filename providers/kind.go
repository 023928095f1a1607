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
	"net/http"
	"time"

	"github.com/sweeper/sweeper/config"
)

// Settings is the kind-specific part of a [providers.NAME] block: the
// configuration decodes and validates it (see config.Settings).
type Settings = config.Settings

// SecretEnv names an environment variable a provider block reads a
// credential from (see config.SecretEnv).
type SecretEnv = config.SecretEnv

// SecretHolder is implemented by settings that read credentials.
type SecretHolder = config.SecretHolder

// Noter is implemented by settings that, valid as they are, may still not
// do what their author meant (see config.Noter).
type Noter = config.Noter

// Defaulter is implemented by settings with keys whose zero value stands
// for a default (see config.Defaulter).
type Defaulter = config.Defaulter

// Kind is one kind of adapter, as named by a block's kind key.
type Kind struct {
	// Name is the value of the kind key, e.g. "http".
	Name string
	// NewSettings returns settings holding the kind's defaults; the block is
	// decoded over them. A default that a zero stands for too is applied
	// after decoding, by the settings' [Defaulter]. Must return a pointer.
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

// Config returns what the configuration knows of k: its name, its
// settings and its default settle_window.
func (k Kind) Config() config.Kind {
	return config.Kind{Name: k.Name, NewSettings: k.NewSettings, SettleWindow: k.SettleWindow}
}

// Kinds is a list of kinds: the adapters a build of sweeper has, which
// the configuration decodes blocks through.
type Kinds []Kind

// ConfigKinds returns what the configuration knows of each kind.
func (ks Kinds) ConfigKinds() []config.Kind {
	out := make([]config.Kind, len(ks))
	for i, k := range ks {
		out[i] = k.Config()
	}
	return out
}

// WithSettleWindow returns k with d as its default settle_window.
func (k Kind) WithSettleWindow(d time.Duration) Kind {
	k.SettleWindow = d
	return k
}

// Env is what an adapter may take from the process: every adapter's New
// has the one shape New(name string, cfg *Config, env Env) (*Adapter, error).
type Env struct {
	// Getenv reads the environment (credentials named by *_env keys). Nil
	// reads an empty environment.
	Getenv func(string) string
	// Logger is already scoped to the provider. Nil discards.
	Logger *slog.Logger
	// Transport carries an HTTP adapter's requests once the read-only check
	// has let them through (see [Env.ReadOnly]): a test's fake of the
	// provider, or the traced transport when traces are on (a refused
	// request never reaches it). Nil is http.DefaultTransport.
	Transport http.RoundTripper
	// Tokens keeps the tokens of an adapter that refreshes OAuth tokens
	// its provider rotates, shared by every replica and kept across
	// restarts. Nil: the adapter keeps them in memory only.
	Tokens TokenStore
}

// Var reads the environment variable name through e.Getenv; a nil Getenv
// is an empty environment. Adapters hand it to config.Secret.
func (e Env) Var(name string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(name)
}

// Log returns e.Logger, or a logger that discards when it is nil.
func (e Env) Log() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger
}

// RoundTripper returns e.Transport, or http.DefaultTransport when it is
// nil: the transport beneath an adapter that puts its own checks over it.
func (e Env) RoundTripper() http.RoundTripper {
	if e.Transport == nil {
		return http.DefaultTransport
	}
	return e.Transport
}

// ReadOnly returns the transport an HTTP adapter sends through: e.Transport
// under a [ReadOnlyTransport] that lets through GET, HEAD and the searches
// declared here, in the adapter's code (I1).
func (e Env) ReadOnly(searches ...SearchEndpoint) ReadOnlyTransport {
	return ReadOnlyTransport{Base: e.Transport, Searches: searches}
}

// NewKind describes an adapter whose settings are a *C and whose
// constructor is New: it checks the settings' type once, here, so
// adapters need not. An adapter's Kind is
//
//	var Kind = providers.NewKind("name", newConfig, New)
//
// and a build error is returned as it is (never a nil *A in a non-nil
// Lookup).
func NewKind[C Settings, A Lookup](name string, newSettings func() C, build func(name string, cfg C, env Env) (A, error)) Kind {
	return Kind{
		Name:        name,
		NewSettings: func() Settings { return newSettings() },
		New: func(blockName string, s Settings, env Env) (Lookup, error) {
			cfg, ok := s.(C)
			if !ok {
				return nil, fmt.Errorf("%s: settings are %T", name, s)
			}
			a, err := build(blockName, cfg, env)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
	}
}
