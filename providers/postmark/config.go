package postmark

import (
	"errors"
	"regexp"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultAPIBase      = "https://api.postmarkapp.com"
	DefaultMetadataKey  = "op_key"
	DefaultSettleWindow = 5 * time.Minute
)

// Config is the kind-specific part of a postmark provider block.
type Config struct {
	// ServerTokenEnv names the environment variable holding the Postmark
	// server's API token (NAME_FILE, a file holding it, works too): the
	// token of the server the workflow sends through, sent as
	// X-Postmark-Server-Token. Required.
	ServerTokenEnv string `toml:"server_token_env"`
	// APIBase is the address of Postmark's API, overridden for tests and
	// proxies: an absolute http or https URL whose path is kept as a prefix.
	// Default https://api.postmarkapp.com.
	APIBase string `toml:"api_base"`
	// MetadataKey is the Metadata key under which the workflow sends the
	// ledger's op_key: 1-40 letters, digits, '_', '-' or '.'. Default
	// "op_key".
	MetadataKey string `toml:"metadata_key"`
	// MessageStream, when set, is the message stream searched
	// ("outbound", "broadcast", a stream's id). Default "": Postmark's
	// default for the search.
	MessageStream string `toml:"message_stream"`
}

// newConfig returns a Config holding the defaults.
func newConfig() *Config {
	return &Config{
		APIBase:     DefaultAPIBase,
		MetadataKey: DefaultMetadataKey,
	}
}

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
)

var streamRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. server_token_env is checked by the configuration, through
// SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	if err := providers.CheckAPIBase(c.APIBase, "server_token_env"); err != nil {
		errs = append(errs, err)
	}
	// A plain name, so that metadata_<key> is one query parameter.
	if err := providers.CheckKeyName("metadata_key", c.MetadataKey); err != nil {
		errs = append(errs, err)
	}
	if c.MessageStream != "" && !streamRE.MatchString(c.MessageStream) {
		errs = append(errs, errors.New("message_stream: must be a stream id: 1-64 letters, digits, '_' or '-'"))
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: server_token_env is
// required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "server_token_env", Name: c.ServerTokenEnv, Required: true}}
}
