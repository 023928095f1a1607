package twilio

import (
	"context"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
)

// RecordNamespace implements providers.RecordNamespacer: a message lives in
// the account whose Account SID the block reads, so blocks reading one SID
// share their records. No request is made.
func (a *Adapter) RecordNamespace(context.Context) (string, error) { return "twilio:" + a.sid, nil }

// AccountHint implements providers.AccountHinter: the Account SID's
// fingerprint (the SID is handled as a secret).
func (c *Config) AccountHint(getenv func(string) string) string {
	sid, err := config.BlockSecret(getenv, "account_sid_env", c.AccountSIDEnv)
	if err != nil || sid == "" {
		return ""
	}
	return "twilio:account:" + providers.Fingerprint(sid)
}
