package sendgrid

import (
	"fmt"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Regions, as named by the region key (and by sendgrid-go): where the
// account's data lives.
const (
	RegionGlobal = "global"
	RegionEU     = "eu"
)

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultRegion       = RegionGlobal
	DefaultCustomArg    = "op_key"
	DefaultSettleWindow = 5 * time.Minute
)

// Config is the kind-specific part of a sendgrid provider block.
type Config struct {
	// APIKeyEnv names the environment variable holding a SendGrid API key
	// of the account (or subuser) that sends, with read access to Email
	// Logs (NAME_FILE, a file holding it, works too). Required.
	APIKeyEnv string `toml:"api_key_env"`
	// Region is where the account's data lives: "global"
	// (api.sendgrid.com) or "eu" (api.eu.sendgrid.com, EU regional
	// subusers). Default "global".
	Region string `toml:"region"`
	// APIBase, when set, is the http or https URL the region's API is
	// reached at instead (tests, proxies); a path is kept as a prefix.
	// Default "": SendGrid's host for the region.
	APIBase string `toml:"api_base"`
	// CustomArg is the custom_args key the workflow sends the op_key
	// under: 1-40 letters, digits, '_', '-' or '.'. Default "op_key".
	CustomArg string `toml:"custom_arg"`
}

// newConfig returns a Config holding the defaults.
func newConfig() *Config {
	return &Config{
		Region:    DefaultRegion,
		CustomArg: DefaultCustomArg,
	}
}

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. api_key_env is checked by the configuration, through
// SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	if c.Region != RegionGlobal && c.Region != RegionEU {
		errs = append(errs, fmt.Errorf("region: must be %q or %q", RegionGlobal, RegionEU))
	}
	if err := providers.CheckAPIBase(c.APIBase, "api_key_env"); err != nil {
		errs = append(errs, err)
	}
	if err := providers.CheckKeyName("custom_arg", c.CustomArg); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: api_key_env is required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "api_key_env", Name: c.APIKeyEnv, Required: true}}
}
