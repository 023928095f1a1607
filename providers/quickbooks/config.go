package quickbooks

import (
	"errors"
	"regexp"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultAPIBase      = "https://quickbooks.api.intuit.com"
	DefaultSettleWindow = 5 * time.Minute
)

// Config is the kind-specific part of a quickbooks provider block: one
// QuickBooks Online company (realm) per block.
type Config struct {
	// RealmID is the company's id (the realmId of the OAuth connection).
	// Required.
	RealmID string `toml:"realm_id"`
	// AccessTokenEnv names the environment variable holding an OAuth 2.0
	// access token with the com.intuit.quickbooks.accounting scope
	// (NAME_FILE, a file holding it, works too). Required. sweeper does not
	// refresh it.
	AccessTokenEnv string `toml:"access_token_env"`
	// APIBase is the address of the QuickBooks Online API, overridden for
	// the sandbox, tests and proxies. Default
	// https://quickbooks.api.intuit.com.
	APIBase string `toml:"api_base"`
}

// newConfig returns a Config holding the defaults.
func newConfig() *Config { return &Config{APIBase: DefaultAPIBase} }

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
)

// realmRE is a realm id: Intuit's company ids are decimal digits.
var realmRE = regexp.MustCompile(`^[0-9]{1,32}$`)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. access_token_env is checked by the configuration, through
// SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	if !realmRE.MatchString(c.RealmID) {
		errs = append(errs, errors.New("realm_id: required: the company's realm id, 1-32 digits"))
	}
	if err := providers.CheckAPIBase(c.APIBase, "access_token_env"); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: access_token_env is
// required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "access_token_env", Name: c.AccessTokenEnv, Required: true}}
}
