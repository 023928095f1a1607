package stripe_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/stripe"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults[*stripe.Config](t, stripe.Kind, nil, []providers.SecretEnv{{Key: "secret_key_env", Name: "", Required: true}})
	if cfg.APIBase != "https://api.stripe.com" || cfg.MetadataKey != "op_key" ||
		!cmp.Equal(cfg.Objects, []string{"payment_intents"}) || stripe.Kind.SettleWindow != 10*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*stripe.Config](t, stripe.Kind, `
secret_key_env = "STRIPE_RESTRICTED_KEY"
api_base = "http://127.0.0.1:12111"
metadata_key = "sweeper_op"
objects = ["charges", "payment_intents"]
`)
	if cfg.SecretKeyEnv != "STRIPE_RESTRICTED_KEY" || cfg.APIBase != "http://127.0.0.1:12111" || cfg.MetadataKey != "sweeper_op" ||
		!cmp.Equal(cfg.Objects, []string{"charges", "payment_intents"}) {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	providertest.ConfigCases(t, stripe.Kind, nil, []providertest.ConfigCase[*stripe.Config]{
		{Desc: "api_base not a URL", Change: func(c *stripe.Config) { c.APIBase = "api.stripe.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base ftp", Change: func(c *stripe.Config) { c.APIBase = "ftp://api.stripe.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base with credentials", Change: func(c *stripe.Config) { c.APIBase = "https://sk_live_x:@api.stripe.com" },
			Want: []string{"api_base: must not carry credentials; use secret_key_env"}},
		{Desc: "api_base with a query", Change: func(c *stripe.Config) { c.APIBase = "https://api.stripe.com/?x=1" },
			Want: []string{"api_base: must not have a query or a fragment"}},
		{Desc: "api_base with an empty query", Change: func(c *stripe.Config) { c.APIBase = "https://api.stripe.com/?" },
			Want: []string{"api_base: must not have a query or a fragment"}},
		{Desc: "empty api_base is Stripe's", Change: func(c *stripe.Config) { c.APIBase = "" }},
		{Desc: "metadata_key empty", Change: func(c *stripe.Config) { c.MetadataKey = "" },
			Want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{Desc: "metadata_key with a quote", Change: func(c *stripe.Config) { c.MetadataKey = "op']:'x" },
			Want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{Desc: "metadata_key too long", Change: func(c *stripe.Config) { c.MetadataKey = strings.Repeat("k", 41) },
			Want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{Desc: "no objects", Change: func(c *stripe.Config) { c.Objects = nil },
			Want: []string{"objects: at least one of payment_intents, charges, invoices"}},
		{Desc: "unknown object", Change: func(c *stripe.Config) { c.Objects = []string{"payment_intents", "customers"} },
			Want: []string{`objects: unknown object type "customers": one of payment_intents, charges, invoices`}},
		{Desc: "invoices with the others", Change: func(c *stripe.Config) { c.Objects = []string{"payment_intents", "charges", "invoices"} }},
		{Desc: "object twice", Change: func(c *stripe.Config) { c.Objects = []string{"charges", "charges"} },
			Want: []string{`objects: "charges" is listed twice`}},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, stripe.Kind, "secret_key_env", func(c *stripe.Config, name string) { c.SecretKeyEnv = name }, testKey, nil)
}
