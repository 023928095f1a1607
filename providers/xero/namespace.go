package xero

import (
	"context"
	"fmt"

	"github.com/sweeper/sweeper/providers"
)

// connectionsPath lists the organisations (tenants) an access token opens.
const connectionsPath = "/connections"

// RecordNamespace implements providers.RecordNamespacer: an invoice belongs
// to one organisation, which tenant_id names. It reads the token's
// connections once (GET /connections, read-only) so that a token that
// does not open the organisation leaves the provider not ready at start,
// and answers "xero:" and the tenant id.
func (a *Adapter) RecordNamespace(ctx context.Context) (string, error) {
	body, err := a.get(ctx, connectionsPath, nil, "the connections")
	if err != nil {
		return "", providers.Redact(err, a.tokens.Secrets()...)
	}
	var conns []struct {
		TenantID string `json:"tenantId"`
	}
	if err := providers.DecodeJSON(body, &conns); err != nil || conns == nil {
		return "", providers.Malformed(fmt.Errorf("%s: GET connections: malformed answer", a.name))
	}
	for _, c := range conns {
		if c.TenantID == a.tenant {
			return "xero:" + a.tenant, nil
		}
	}
	return "", providers.Permanent(fmt.Errorf("%s: the access token does not open tenant_id %s", a.name, a.tenant))
}

// AccountHint implements providers.AccountHinter: the tenant id, without a
// request.
func (c *Config) AccountHint(func(string) string) string {
	if c.TenantID == "" {
		return ""
	}
	return "xero:" + c.TenantID
}
