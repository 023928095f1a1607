package sendgrid_test

import (
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/sendgrid"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults[*sendgrid.Config](t, sendgrid.Kind, nil, []providers.SecretEnv{{Key: "api_key_env", Name: "", Required: true}})
	if cfg.Region != "global" || cfg.APIBase != "" || cfg.CustomArg != "op_key" || sendgrid.Kind.SettleWindow != 5*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*sendgrid.Config](t, sendgrid.Kind, `
api_key_env = "SENDGRID_API_KEY"
region = "eu"
api_base = "http://127.0.0.1:3030"
custom_arg = "sweeper_op"
`)
	if cfg.APIKeyEnv != "SENDGRID_API_KEY" || cfg.Region != "eu" || cfg.APIBase != "http://127.0.0.1:3030" ||
		cfg.CustomArg != "sweeper_op" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	providertest.ConfigCases(t, sendgrid.Kind, nil, []providertest.ConfigCase[*sendgrid.Config]{
		{Desc: "an unknown region", Change: func(c *sendgrid.Config) { c.Region = "us" },
			Want: []string{`region: must be "global" or "eu"`}},
		{Desc: "api_base not a URL", Change: func(c *sendgrid.Config) { c.APIBase = "api.sendgrid.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base with credentials", Change: func(c *sendgrid.Config) { c.APIBase = "https://apikey:SG.x@api.sendgrid.com" },
			Want: []string{"api_base: must not carry credentials; use api_key_env"}},
		{Desc: "api_base with a query", Change: func(c *sendgrid.Config) { c.APIBase = "https://api.sendgrid.com/?x=1" },
			Want: []string{"api_base: must not have a query or a fragment"}},
		{Desc: "custom_arg empty", Change: func(c *sendgrid.Config) { c.CustomArg = "" },
			Want: []string{"custom_arg: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{Desc: "custom_arg with a quote", Change: func(c *sendgrid.Config) { c.CustomArg = `op"key` },
			Want: []string{"custom_arg: must be 1-40 letters, digits, '_', '-' or '.'"}},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, sendgrid.Kind, "api_key_env", func(c *sendgrid.Config, name string) { c.APIKeyEnv = name }, apiKey, nil)
}
