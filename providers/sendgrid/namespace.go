package sendgrid

import (
	"context"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
)

// RecordNamespace implements providers.RecordNamespacer. SendGrid's API
// names no account id a restricted key (Email Activity read) may read, so
// the namespace is the API key's fingerprint: blocks using one key share
// their records. Two keys of one account are not recognised as one — give
// such blocks one key. No request is made.
func (a *Adapter) RecordNamespace(context.Context) (string, error) {
	return "sendgrid:key:" + providers.Fingerprint(a.key), nil
}

// AccountHint implements providers.AccountHinter: the key's fingerprint.
func (c *Config) AccountHint(getenv func(string) string) string {
	key, err := config.BlockSecret(getenv, "api_key_env", c.APIKeyEnv)
	if err != nil || key == "" {
		return ""
	}
	return "sendgrid:key:" + providers.Fingerprint(key)
}
