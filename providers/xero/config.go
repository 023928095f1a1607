package xero

import (
	"errors"
	"regexp"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// DefaultSettleWindow covers the moment between Xero saving an invoice and
// its answer to a read: Xero documents no search index, so a short window.
const DefaultSettleWindow = 2 * time.Minute

// Config is the kind-specific part of a xero provider block.
type Config struct {
	// AccessTokenEnv names the environment variable holding an OAuth2
	// access token (NAME_FILE, a file holding it, works too), sent as a
	// Bearer token; it needs the accounting.transactions.read scope only.
	// sweeper does not refresh it. Required.
	AccessTokenEnv string `toml:"access_token_env"`
	// TenantID is the Xero organisation (tenant) the invoices are in, sent
	// as the Xero-tenant-id header: a UUID. Required.
	TenantID string `toml:"tenant_id"`
	// APIBase is where requests go instead of https://api.xero.com, for
	// tests against a fake: an absolute http or https URL whose path is
	// kept as a prefix. Default "" (Xero's).
	APIBase string `toml:"api_base"`
}

func newConfig() *Config { return &Config{} }

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
)

// tenantRE is a Xero tenant id: a UUID.
var tenantRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. access_token_env is checked through SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	if err := providers.CheckAPIBase(c.APIBase, "access_token_env"); err != nil {
		errs = append(errs, err)
	}
	if !tenantRE.MatchString(c.TenantID) {
		errs = append(errs, errors.New("tenant_id: must be the organisation's tenant id, a UUID"))
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: access_token_env is
// required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "access_token_env", Name: c.AccessTokenEnv, Required: true}}
}
