package hubspot_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/hubspot"
	"github.com/sweeper/sweeper/providers/providertest"
)

func validConfig(c *hubspot.Config) { c.Object = hubspot.ObjectContacts }

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults[*hubspot.Config](t, hubspot.Kind, validConfig, []providers.SecretEnv{{Key: "access_token_env", Name: "", Required: true}})
	if cfg.APIBase != "" || cfg.Property != "op_key" || cfg.UniqueProperty || hubspot.Kind.SettleWindow != 5*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
	for object, want := range map[string][]string{"contacts": {"email"}, "deals": {"dealname"}, "notes": {"hs_note_body"}} {
		c := hubspot.Kind.NewSettings().(*hubspot.Config)
		c.Object = object
		c.ApplyDefaults()
		if !slices.Equal(c.PayloadProperties, want) {
			t.Errorf("%s: payload_properties %v, want %v", object, c.PayloadProperties, want)
		}
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*hubspot.Config](t, hubspot.Kind, `
access_token_env = "HUBSPOT_TOKEN"
api_base = "http://127.0.0.1:8025/hubspot"
object = "deals"
property = "sweeper_op_key"
unique_property = true
payload_properties = ["dealname", "amount"]
`)
	if cfg.AccessTokenEnv != "HUBSPOT_TOKEN" || cfg.APIBase != "http://127.0.0.1:8025/hubspot" || cfg.Object != "deals" ||
		cfg.Property != "sweeper_op_key" || !cfg.UniqueProperty || !slices.Equal(cfg.PayloadProperties, []string{"dealname", "amount"}) {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	providertest.ConfigCases(t, hubspot.Kind, validConfig, []providertest.ConfigCase[*hubspot.Config]{
		{Desc: "api_base not a URL", Change: func(c *hubspot.Config) { c.APIBase = "api.hubapi.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base with credentials", Change: func(c *hubspot.Config) { c.APIBase = "https://x:y@api.hubapi.com" },
			Want: []string{"api_base: must not carry credentials; use access_token_env"}},
		{Desc: "no object", Change: func(c *hubspot.Config) { c.Object = "" },
			Want: []string{"object: must be one of contacts, deals, notes"}},
		{Desc: "object by id", Change: func(c *hubspot.Config) { c.Object = "0-1" },
			Want: []string{"object: must be one of contacts, deals, notes"}},
		{Desc: "property with a capital", Change: func(c *hubspot.Config) { c.Property = "OpKey" },
			Want: []string{"property: must be a property's internal name: lowercase letters, digits and '_', starting with a letter, at most 100"}},
		{Desc: "property empty", Change: func(c *hubspot.Config) { c.Property = "" },
			Want: []string{"property: must be a property's internal name: lowercase letters, digits and '_', starting with a letter, at most 100"}},
		{Desc: "payload property twice", Change: func(c *hubspot.Config) { c.PayloadProperties = []string{"email", "email"} },
			Want: []string{`payload_properties: "email" is listed twice`}},
		{Desc: "payload property not a name", Change: func(c *hubspot.Config) { c.PayloadProperties = []string{"e-mail"} },
			Want: []string{`payload_properties: "e-mail" is not a property's internal name`}},
		{Desc: "unique property", Change: func(c *hubspot.Config) { c.UniqueProperty = true }},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, hubspot.Kind, "access_token_env", func(c *hubspot.Config, name string) {
		c.AccessTokenEnv = name
		c.Object = hubspot.ObjectContacts
	}, token, nil)
}
