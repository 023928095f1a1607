package quickbooks

import (
	"context"
	"fmt"

	"github.com/sweeper/sweeper/providers"
)

// RecordNamespace implements providers.RecordNamespacer: an invoice
// belongs to one company, and realm_id names it. It reads the company once
// (GET /v3/company/{realmId}/companyinfo/{realmId}, read-only) so that a
// token that cannot read the company leaves the provider not ready at
// start, and answers "quickbooks:" and the realm id.
func (a *Adapter) RecordNamespace(ctx context.Context) (string, error) {
	body, err := a.get(ctx, "/v3/company/"+a.realm+"/companyinfo/"+a.realm, nil)
	if err != nil {
		return "", providers.Redact(err, a.tokens.Secrets()...)
	}
	var info struct {
		CompanyInfo *struct {
			ID string `json:"Id"`
		} `json:"CompanyInfo"`
	}
	if err := providers.DecodeJSON(body, &info); err != nil || info.CompanyInfo == nil || info.CompanyInfo.ID != a.realm {
		return "", providers.Malformed(fmt.Errorf("%s: GET companyinfo: malformed answer: not the company of realm_id", a.name))
	}
	return "quickbooks:" + a.realm, nil
}

// AccountHint implements providers.AccountHinter: the realm id, without a
// request.
func (c *Config) AccountHint(func(string) string) string {
	if c.RealmID == "" {
		return ""
	}
	return "quickbooks:" + c.RealmID
}
