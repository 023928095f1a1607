package twilio

import (
	"errors"

	"github.com/sweeper/sweeper/providers"
)

// DefaultAPIBase is Twilio's REST API, where api_base points by default.
const DefaultAPIBase = "https://api.twilio.com"

// newConfig returns a twilio block's defaults.
func newConfig() *Config { return &Config{APIBase: DefaultAPIBase} }

// Config is the kind-specific part of a twilio provider block.
type Config struct {
	// AccountSIDEnv names the environment variable holding the Account SID
	// (AC…), which is also the basic-auth user. Required; no default.
	AccountSIDEnv string `toml:"account_sid_env"`
	// AuthTokenEnv names the environment variable holding the account's auth
	// token (or an API key secret). Required; no default.
	AuthTokenEnv string `toml:"auth_token_env"`
	// APIBase is the http or https URL requests go to instead of
	// https://api.twilio.com, for tests and proxies; a path is kept as a
	// prefix. Default https://api.twilio.com.
	APIBase string `toml:"api_base"`
	// From, when set, narrows the search to messages sent from this number
	// (or messaging channel address). Default none: every sender.
	From string `toml:"from"`
}

// Validate implements providers.Settings.
func (c *Config) Validate() []error {
	var errs []error
	// account_sid_env and auth_token_env are checked by the configuration
	// (through SecretEnvs): required, a valid name, set in the environment.
	if err := providers.CheckAPIBase(c.APIBase, "account_sid_env and auth_token_env"); err != nil {
		errs = append(errs, err)
	}
	if c.From != "" && !searchable(c.From) {
		errs = append(errs, errors.New(`from: must not contain "." followed by a digit (twilio-go drops it from queries)`))
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder. The Account SID is not a
// secret by itself, but it names the account and is half of the basic-auth
// pair, so it is handled like the token.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{
		{Key: "account_sid_env", Name: c.AccountSIDEnv, Required: true},
		{Key: "auth_token_env", Name: c.AuthTokenEnv, Required: true},
	}
}

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
)
