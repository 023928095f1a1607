package mailgun_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/mailgun"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults(t, mailgun.Kind, func(c *mailgun.Config) { c.Domain = domain }, []providers.SecretEnv{{Key: "api_key_env", Name: "", Required: true}})
	if cfg.Region != "us" || cfg.APIBase != "" || cfg.Variable != "op_key" || mailgun.Kind.SettleWindow != 30*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*mailgun.Config](t, mailgun.Kind, `
api_key_env = "MAILGUN_API_KEY"
domain = "mg.acme.example"
region = "eu"
api_base = "http://127.0.0.1:8025"
variable = "sweeper_op"
`)
	if cfg.APIKeyEnv != "MAILGUN_API_KEY" || cfg.Domain != domain || cfg.Region != "eu" || cfg.APIBase != "http://127.0.0.1:8025" ||
		cfg.Variable != "sweeper_op" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	providertest.ConfigCases(t, mailgun.Kind, func(c *mailgun.Config) { c.Domain = domain }, []providertest.ConfigCase[*mailgun.Config]{
		{Desc: "no domain", Change: func(c *mailgun.Config) { c.Domain = "" },
			Want: []string{"domain: required: the sending domain whose events are searched"}},
		{Desc: "a domain with a path", Change: func(c *mailgun.Config) { c.Domain = "mg.acme.example/messages" },
			Want: []string{"domain: must be a domain name, e.g. mg.example.com"}},
		{Desc: "a domain without a dot", Change: func(c *mailgun.Config) { c.Domain = "localhost" },
			Want: []string{"domain: must be a domain name, e.g. mg.example.com"}},
		{Desc: "a domain label too long", Change: func(c *mailgun.Config) { c.Domain = strings.Repeat("a", 64) + ".example" },
			Want: []string{"domain: must be a domain name, e.g. mg.example.com"}},
		{Desc: "an unknown region", Change: func(c *mailgun.Config) { c.Region = "ap" },
			Want: []string{`region: must be "us" or "eu"`}},
		{Desc: "api_base not a URL", Change: func(c *mailgun.Config) { c.APIBase = "api.mailgun.net" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base with credentials", Change: func(c *mailgun.Config) { c.APIBase = "https://api:key-1@api.mailgun.net" },
			Want: []string{"api_base: must not carry credentials; use api_key_env"}},
		{Desc: "api_base with a query", Change: func(c *mailgun.Config) { c.APIBase = "https://api.mailgun.net/?x=1" },
			Want: []string{"api_base: must not have a query or a fragment"}},
		{Desc: "variable empty", Change: func(c *mailgun.Config) { c.Variable = "" },
			Want: []string{"variable: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{Desc: "variable with v: prefix", Change: func(c *mailgun.Config) { c.Variable = "v:op_key" },
			Want: []string{"variable: must be 1-40 letters, digits, '_', '-' or '.'"}},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, mailgun.Kind, "api_key_env", func(c *mailgun.Config, name string) { c.APIKeyEnv = name; c.Domain = domain }, apiKey, nil)
}
