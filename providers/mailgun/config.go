package mailgun

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Regions, as named by the region key: where the account's domain lives.
const (
	RegionUS = "us"
	RegionEU = "eu"
)

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultRegion       = RegionUS
	DefaultVariable     = "op_key"
	DefaultSettleWindow = 30 * time.Minute
)

// Config is the kind-specific part of a mailgun provider block.
type Config struct {
	// APIKeyEnv names the environment variable holding a Mailgun API key
	// that can read the domain's events (NAME_FILE, a file holding it,
	// works too). A domain sending key cannot. Required.
	APIKeyEnv string `toml:"api_key_env"`
	// Domain is the sending domain whose events are searched
	// ("mg.example.com"). Required.
	Domain string `toml:"domain"`
	// Region is where the domain lives: "us" (api.mailgun.net) or "eu"
	// (api.eu.mailgun.net). Default "us".
	Region string `toml:"region"`
	// APIBase, when set, is the http or https URL the region's API is
	// reached at instead (tests, proxies); a path is kept as a prefix.
	// Default "": the region's host.
	APIBase string `toml:"api_base"`
	// Variable is the user variable the workflow sends the op_key in
	// (v:op_key, shown in events as user-variables.op_key): 1-40 letters,
	// digits, '_', '-' or '.'. Default "op_key".
	Variable string `toml:"variable"`
}

// newConfig returns a Config holding the defaults.
func newConfig() *Config {
	return &Config{
		Region:   DefaultRegion,
		Variable: DefaultVariable,
	}
}

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
)

var (
	// domainRE is a DNS name: what Mailgun's paths take as a domain.
	domainRE = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)
)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. api_key_env is checked by the configuration, through
// SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	switch {
	case c.Domain == "":
		errs = append(errs, errors.New("domain: required: the sending domain whose events are searched"))
	case len(c.Domain) > 253 || !domainRE.MatchString(c.Domain):
		errs = append(errs, errors.New("domain: must be a domain name, e.g. mg.example.com"))
	}
	if c.Region != RegionUS && c.Region != RegionEU {
		errs = append(errs, fmt.Errorf("region: must be %q or %q", RegionUS, RegionEU))
	}
	if err := providers.CheckAPIBase(c.APIBase, "api_key_env"); err != nil {
		errs = append(errs, err)
	}
	if err := providers.CheckKeyName("variable", c.Variable); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: api_key_env is required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "api_key_env", Name: c.APIKeyEnv, Required: true}}
}
