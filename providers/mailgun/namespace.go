package mailgun

import (
	"context"
	"strings"
)

// RecordNamespace implements providers.RecordNamespacer: Mailgun's events
// belong to a sending domain, which exists in one account; blocks naming
// one domain share their records. No request is made.
func (a *Adapter) RecordNamespace(context.Context) (string, error) {
	return "mailgun:" + strings.ToLower(a.domain), nil
}

// AccountHint implements providers.AccountHinter: the domain.
func (c *Config) AccountHint(func(string) string) string {
	if c.Domain == "" {
		return ""
	}
	return "mailgun:" + strings.ToLower(c.Domain)
}
