package quickbooks

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultAPIBase      = "https://quickbooks.api.intuit.com"
	DefaultTokenURL     = "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer"
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
	// refresh it unless refresh_token_env is set.
	AccessTokenEnv string `toml:"access_token_env"`
	// RefreshTokenEnv, ClientIDEnv and ClientSecretEnv name the variables
	// holding the OAuth refresh token and the app's client id and secret:
	// all three or none. With them, an access token the API refuses (401)
	// is renewed; the rotated refresh token is kept in the token store
	// (sweeper.provider_tokens), the variable giving the first one only.
	RefreshTokenEnv string `toml:"refresh_token_env"`
	ClientIDEnv     string `toml:"client_id_env"`
	ClientSecretEnv string `toml:"client_secret_env"`
	// TokenURL is Intuit's token endpoint, overridden for tests. Default
	// https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer.
	TokenURL string `toml:"token_url"`
	// APIBase is the address of the QuickBooks Online API, overridden for
	// the sandbox, tests and proxies. Default
	// https://quickbooks.api.intuit.com.
	APIBase string `toml:"api_base"`
}

// newConfig returns a Config holding the defaults.
func newConfig() *Config { return &Config{APIBase: DefaultAPIBase, TokenURL: DefaultTokenURL} }

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
	if set := countSet(c.RefreshTokenEnv, c.ClientIDEnv, c.ClientSecretEnv); set != 0 && set != 3 {
		errs = append(errs, errors.New("refresh_token_env: set with client_id_env and client_secret_env, all three or none"))
	}
	if c.TokenURL != "" {
		if err := providers.CheckBaseURL(c.TokenURL, "client_secret_env"); err != nil {
			errs = append(errs, fmt.Errorf("token_url: %w", err))
		} else if u, _ := url.Parse(c.TokenURL); u.RawQuery != "" || u.ForceQuery {
			errs = append(errs, errors.New("token_url: must not have a query or a fragment"))
		}
	}
	return errs
}

func countSet(names ...string) int {
	n := 0
	for _, s := range names {
		if s != "" {
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
