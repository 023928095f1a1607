package stripe

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
)

// RecordNamespace implements providers.RecordNamespacer: an object belongs
// to the Stripe account the secret key opens. It asks which with one
// GET /v1/account (read-only), so that blocks with two keys of one account
// share their records.
func (a *Adapter) RecordNamespace(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(a.apiBase, "/")+"/v1/account", nil)
	if err != nil {
		return "", providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	_, body, err := providers.HTTPAnswer{Name: a.name, MaxBody: 1 << 20}.Fetch(ctx, providers.ReadOnlyTransport{Base: a.transport}, req)
	if err != nil {
		return "", err
	}
	var account struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := providers.DecodeJSON(body, &account); err != nil || account.Object != "account" || !strings.HasPrefix(account.ID, "acct_") {
		return "", providers.Transient(fmt.Errorf("%s: GET /v1/account: malformed answer: no account id", a.name))
	}
	return "stripe:" + account.ID, nil
}

// AccountHint implements providers.AccountHinter: the secret key's
// fingerprint (sweeper reads the account itself at start).
func (c *Config) AccountHint(getenv func(string) string) string {
	key, err := config.BlockSecret(getenv, "secret_key_env", c.SecretKeyEnv)
	if err != nil || key == "" {
		return ""
	}
	return "stripe:key:" + providers.Fingerprint(key)
}
