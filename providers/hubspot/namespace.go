package hubspot

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
)

// detailsPath is the account information API's details of the account the
// token opens.
const detailsPath = "/account-info/v3/details"

// RecordNamespace implements providers.RecordNamespacer: a record belongs
// to a HubSpot account (portal, hub id), and the access token opens one. It
// asks which with one GET /account-info/v3/details (read-only), so that
// blocks with two tokens of one account share their records.
func (a *Adapter) RecordNamespace(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+apiHost+detailsPath, nil)
	if err != nil {
		return "", providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	body, _, err := a.send(ctx, req, "the account details", false)
	if err != nil {
		return "", providers.Redact(err, a.token)
	}
	var details struct {
		PortalID *int64 `json:"portalId"`
	}
	if err := providers.DecodeJSON(body, &details); err != nil || details.PortalID == nil || *details.PortalID <= 0 {
		return "", providers.Transient(fmt.Errorf("%s: GET %s: malformed answer: no portalId", a.name, detailsPath))
	}
	return "hubspot:" + strconv.FormatInt(*details.PortalID, 10), nil
}

// AccountHint implements providers.AccountHinter: the access token's
// fingerprint (sweeper reads the account itself at start).
func (c *Config) AccountHint(getenv func(string) string) string {
	token, err := config.BlockSecret(getenv, "access_token_env", c.AccessTokenEnv)
	if err != nil || token == "" {
		return ""
	}
	return "hubspot:token:" + providers.Fingerprint(token)
}
