package xero

import (
	"errors"
	"fmt"
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
	// Refreshed on a 401 when the refresh keys are set. Required.
	AccessTokenEnv string `toml:"access_token_env"`
	// RefreshTokenEnv, ClientIDEnv and ClientSecretEnv name the variables
	// holding the connection's refresh token and the app's client id and
	// secret: all three or none. With them, an access token the API
	// refuses (401) is renewed with the refresh token grant; Xero rotates
	// the refresh token on every use, so the variable gives the first one
	// only and the newest is kept in sweeper.provider_tokens. Default ""
	// (no refresh: a 401 is permanent).
	RefreshTokenEnv string `toml:"refresh_token_env"`
	ClientIDEnv     string `toml:"client_id_env"`
	ClientSecretEnv string `toml:"client_secret_env"`
	// TokenURL is Xero's token endpoint, overridden for tests. Default
	// "https://identity.xero.com/connect/token".
	TokenURL string `toml:"token_url"`
	// TenantID is the Xero organisation (tenant) the invoices are in, sent
	// as the Xero-tenant-id header: a UUID. Required.
	TenantID string `toml:"tenant_id"`
	// APIBase is where requests go instead of https://api.xero.com, for
	// tests against a fake: an absolute http or https URL whose path is
	// kept as a prefix. Default "" (Xero's).
	APIBase string `toml:"api_base"`
}

// DefaultTokenURL is Xero's OAuth 2.0 token endpoint.
const DefaultTokenURL = "https://identity.xero.com/connect/token"

func newConfig() *Config { return &Config{TokenURL: DefaultTokenURL} }

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
	if set := countSet(c.RefreshTokenEnv, c.ClientIDEnv, c.ClientSecretEnv); set != 0 && set != 3 {
		errs = append(errs, errors.New("refresh_token_env: set with client_id_env and client_secret_env, all three or none"))
	}
	if c.TokenURL != "" {
		if err := providers.CheckBaseURL(c.TokenURL, "client_secret_env"); err != nil {
			errs = append(errs, fmt.Errorf("token_url: %w", err))
		}
	}
	return errs
}

// countSet counts the non-empty values.
func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

// SecretEnvs implements providers.SecretHolder: access_token_env is
// required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	envs := []providers.SecretEnv{{Key: "access_token_env", Name: c.AccessTokenEnv, Required: true}}
	if c.RefreshTokenEnv != "" || c.ClientIDEnv != "" || c.ClientSecretEnv != "" {
		envs = append(envs,
			providers.SecretEnv{Key: "refresh_token_env", Name: c.RefreshTokenEnv, Required: true},
			providers.SecretEnv{Key: "client_id_env", Name: c.ClientIDEnv, Required: true},
			providers.SecretEnv{Key: "client_secret_env", Name: c.ClientSecretEnv, Required: true})
	}
	return envs
}
