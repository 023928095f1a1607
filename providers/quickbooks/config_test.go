package quickbooks_test

import (
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/quickbooks"
)

func withRealm(c *quickbooks.Config) { c.RealmID = realmID }

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults[*quickbooks.Config](t, quickbooks.Kind, withRealm, []providers.SecretEnv{{Key: "access_token_env", Name: "", Required: true}})
	if cfg.APIBase != "https://quickbooks.api.intuit.com" || cfg.TokenURL != "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer" || cfg.RefreshTokenEnv != "" || cfg.RealmID != "" || quickbooks.Kind.SettleWindow != 5*time.Minute || quickbooks.Kind.Name != "quickbooks" {
		t.Errorf("defaults %+v", cfg)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*quickbooks.Config](t, quickbooks.Kind, `
realm_id = "9130357766541432"
access_token_env = "QBO_ACCESS_TOKEN"
api_base = "https://sandbox-quickbooks.api.intuit.com"
refresh_token_env = "QBO_REFRESH_TOKEN"
client_id_env = "QBO_CLIENT_ID"
client_secret_env = "QBO_CLIENT_SECRET"
token_url = "http://127.0.0.1:8025/token"
`)
	if cfg.RealmID != realmID || cfg.AccessTokenEnv != "QBO_ACCESS_TOKEN" || cfg.APIBase != "https://sandbox-quickbooks.api.intuit.com" ||
		cfg.RefreshTokenEnv != "QBO_REFRESH_TOKEN" || cfg.ClientIDEnv != "QBO_CLIENT_ID" || cfg.ClientSecretEnv != "QBO_CLIENT_SECRET" || cfg.TokenURL != "http://127.0.0.1:8025/token" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	realmErr := []string{"realm_id: required: the company's realm id, 1-32 digits"}
	providertest.ConfigCases(t, quickbooks.Kind, withRealm, []providertest.ConfigCase[*quickbooks.Config]{
		{Desc: "realm_id missing", Change: func(c *quickbooks.Config) { c.RealmID = "" }, Want: realmErr},
		{Desc: "realm_id with a slash", Change: func(c *quickbooks.Config) { c.RealmID = "1/../2" }, Want: realmErr},
		{Desc: "realm_id not digits", Change: func(c *quickbooks.Config) { c.RealmID = "acme" }, Want: realmErr},
		{Desc: "refresh keys, all three", Change: func(c *quickbooks.Config) { c.RefreshTokenEnv, c.ClientIDEnv, c.ClientSecretEnv = "R", "I", "S" }},
		{Desc: "refresh_token_env alone", Change: func(c *quickbooks.Config) { c.RefreshTokenEnv = "R" },
			Want: []string{"refresh_token_env: set with client_id_env and client_secret_env, all three or none"}},
		{Desc: "client_secret_env without the refresh token", Change: func(c *quickbooks.Config) { c.ClientIDEnv, c.ClientSecretEnv = "I", "S" },
			Want: []string{"refresh_token_env: set with client_id_env and client_secret_env, all three or none"}},
		{Desc: "token_url with a query", Change: func(c *quickbooks.Config) {
			c.TokenURL = "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer?x=1"
		},
			Want: []string{"token_url: must not have a query or a fragment"}},
		{Desc: "api_base not a URL", Change: func(c *quickbooks.Config) { c.APIBase = "quickbooks.api.intuit.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, quickbooks.Kind, "access_token_env", func(c *quickbooks.Config, name string) { c.RealmID, c.AccessTokenEnv = realmID, name }, token, nil)
}
