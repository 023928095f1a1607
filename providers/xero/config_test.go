package xero_test

import (
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/xero"
)

func validConfig(c *xero.Config) { c.TenantID = tenant }

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults[*xero.Config](t, xero.Kind, validConfig, []providers.SecretEnv{{Key: "access_token_env", Name: "", Required: true}})
	if cfg.APIBase != "" || xero.Kind.SettleWindow != xero.DefaultSettleWindow {
		t.Errorf("defaults %+v", cfg)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*xero.Config](t, xero.Kind, `
access_token_env = "XERO_ACCESS_TOKEN"
tenant_id = "`+tenant+`"
api_base = "http://127.0.0.1:8025/xero"
`)
	if cfg.AccessTokenEnv != "XERO_ACCESS_TOKEN" || cfg.TenantID != tenant || cfg.APIBase != "http://127.0.0.1:8025/xero" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	providertest.ConfigCases(t, xero.Kind, validConfig, []providertest.ConfigCase[*xero.Config]{
		{Desc: "no tenant_id", Change: func(c *xero.Config) { c.TenantID = "" },
			Want: []string{"tenant_id: must be the organisation's tenant id, a UUID"}},
		{Desc: "tenant_id a name", Change: func(c *xero.Config) { c.TenantID = "Demo Company (NZ)" },
			Want: []string{"tenant_id: must be the organisation's tenant id, a UUID"}},
		{Desc: "api_base not a URL", Change: func(c *xero.Config) { c.APIBase = "api.xero.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base with credentials", Change: func(c *xero.Config) { c.APIBase = "https://x:y@api.xero.com" },
			Want: []string{"api_base: must not carry credentials; use access_token_env"}},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, xero.Kind, "access_token_env", func(c *xero.Config, name string) {
		c.AccessTokenEnv = name
		c.TenantID = tenant
	}, token, nil)
}
