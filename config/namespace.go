package config

import (
	"maps"
	"slices"
)

// SharedAccount is a group of blocks that reach one account, as far as the
// configuration and the credentials tell without asking the provider: their
// records are one namespace, and a record proves one operation among all
// their rows.
type SharedAccount struct {
	// Kind is the blocks' kind.
	Kind string
	// Blocks are the blocks' names, sorted.
	Blocks []string
	// By says what they share, for people: never a secret.
	By string
}

// SharedAccounts lists the groups of two or more blocks of one kind that
// reach one account: one record_namespace (http, postgres), or one account
// as the kind's settings tell from the block and its credentials
// ([AccountHinter]: a Twilio Account SID, a Mailgun domain, a
// key's fingerprint). Blocks sharing an account through two different keys
// are found by sweeper when it starts, not here. getenv reads the
// credentials; nil reads none, and only what the configuration's text says
// is compared.
func (c *Config) SharedAccounts(getenv Getenv) []SharedAccount {
	groups := map[string]*SharedAccount{}
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		var key, by string
		switch {
		case p.RecordNamespace != "":
			key, by = p.Kind+":"+p.RecordNamespace, "record_namespace "+p.RecordNamespace
		case p.Settings != nil && getenv != nil:
			if h, ok := p.Settings.(AccountHinter); ok {
				if hint := h.AccountHint(getenv); hint != "" {
					key, by = hint, "the same account (by their settings and credentials)"
				}
			}
		}
		if key == "" {
			continue
		}
		if groups[key] == nil {
			groups[key] = &SharedAccount{Kind: p.Kind, By: by}
		}
		groups[key].Blocks = append(groups[key].Blocks, name)
	}
	var out []SharedAccount
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		if g := groups[key]; len(g.Blocks) > 1 {
			out = append(out, *g)
		}
	}
	return out
}
