package config

import "time"

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

// Noter is implemented by settings that valid as they are, may still not
// do what their author meant: check-config prints each note, after its
// block's name, as a comment. A note starts with its key, as a Validate
// message does.
type Noter interface {
	Notes() []string
}

// Defaulter is implemented by settings with keys whose zero value stands
// for a default ("max_batch = 0" is the default batch). ApplyDefaults
// replaces each such zero with the value it stands for. The configuration
// calls it once a block is decoded, and the adapter's New on its own copy,
// so that validation, check-config and the adapter see the value that
// applies.
type Defaulter interface {
	ApplyDefaults()
}

// AccountHinter is implemented by settings that can tell, from the block and
// its credentials alone — no request — which account the block reaches, so
// that check-config can name blocks sharing one. AccountHint returns a
// string equal for two blocks of the kind that reach one account through
// the same identity (an account id, a domain, a key's fingerprint), never a
// secret; "" when it cannot tell.
type AccountHinter interface {
	AccountHint(getenv func(string) string) string
}

// Kind is what the configuration knows of one kind of adapter: the value
// of a block's kind key, the settings its block decodes into (holding the
// kind's defaults; must return a pointer) and its default settle_window.
// The adapters' own list (providers.Kinds) gives it; the configuration
// imports no adapter.
type Kind struct {
	Name         string
	NewSettings  func() Settings
	SettleWindow time.Duration
}

// Kinds is the list of adapter kinds a [providers.NAME] block may name.
type Kinds interface {
	ConfigKinds() []Kind
}

// kindList returns kinds' list, empty for none.
func kindList(kinds Kinds) []Kind {
	if kinds == nil {
		return nil
	}
	return kinds.ConfigKinds()
}
