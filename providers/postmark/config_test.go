package postmark_test

import (
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postmark"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults[*postmark.Config](t, postmark.Kind, nil, []providers.SecretEnv{{Key: "server_token_env", Name: "", Required: true}})
	if cfg.APIBase != "https://api.postmarkapp.com" || cfg.MetadataKey != "op_key" || cfg.MessageStream != "" || postmark.Kind.SettleWindow != 5*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*postmark.Config](t, postmark.Kind, `
server_token_env = "POSTMARK_SERVER_TOKEN"
api_base = "http://127.0.0.1:8025/postmark"
metadata_key = "sweeper_op"
message_stream = "broadcast"
`)
	if cfg.ServerTokenEnv != "POSTMARK_SERVER_TOKEN" || cfg.APIBase != "http://127.0.0.1:8025/postmark" || cfg.MetadataKey != "sweeper_op" ||
		cfg.MessageStream != "broadcast" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	providertest.ConfigCases(t, postmark.Kind, nil, []providertest.ConfigCase[*postmark.Config]{
		{Desc: "api_base not a URL", Change: func(c *postmark.Config) { c.APIBase = "api.postmarkapp.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "api_base with credentials", Change: func(c *postmark.Config) { c.APIBase = "https://token:x@api.postmarkapp.com" },
			Want: []string{"api_base: must not carry credentials; use server_token_env"}},
		{Desc: "api_base with a query", Change: func(c *postmark.Config) { c.APIBase = "https://api.postmarkapp.com/?count=1" },
			Want: []string{"api_base: must not have a query or a fragment"}},
		{Desc: "empty api_base is Postmark's", Change: func(c *postmark.Config) { c.APIBase = "" }},
		{Desc: "metadata_key empty", Change: func(c *postmark.Config) { c.MetadataKey = "" },
			Want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{Desc: "metadata_key with an ampersand", Change: func(c *postmark.Config) { c.MetadataKey = "op&count=1" },
			Want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{Desc: "message_stream with a space", Change: func(c *postmark.Config) { c.MessageStream = "my stream" },
			Want: []string{"message_stream: must be a stream id: 1-64 letters, digits, '_' or '-'"}},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, postmark.Kind, "server_token_env", func(c *postmark.Config, name string) { c.ServerTokenEnv = name }, serverToken, nil)
}
