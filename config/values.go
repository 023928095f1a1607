package config

import (
	"fmt"
	"maps"
)

// Values is the effective configuration flattened to one string per key
// ("review.owners.workflows.billing", "providers.stripe.rate_limit"): a
// table's keys are walked, an array of tables ([[routes]],
// [[review.escalation]], a provider's rules) is one value. It is for
// comparing two configurations key by key; the values may hold a
// database URL's password and are never to be logged or shown.
func (c *Config) Values() (map[string]string, error) {
	out := map[string]string{}
	tree, err := toMap(c)
	if err != nil {
		return nil, err
	}
	flatten("", tree, out)
	for name, p := range c.Providers {
		block, err := toMap(p)
		if err != nil {
			return nil, err
		}
		if p.Settings != nil {
			settings, err := toMap(p.Settings)
			if err != nil {
				return nil, err
			}
			maps.Copy(block, settings)
		}
		flatten("providers."+name, block, out)
	}
	return out, nil
}

// flatten writes tree's leaves into out under prefix.
func flatten(prefix string, tree map[string]any, out map[string]string) {
	for k, v := range tree {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(key, sub, out)
			continue
		}
		out[key] = fmt.Sprint(v)
	}
}
