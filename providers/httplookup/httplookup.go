// Package httplookup is the generic lookup protocol: any service that
// answers one GET with the records it holds for an operation can be a
// provider, an n8n webhook workflow included.
//
//	GET {url}?op_key=…&recipient=…&action=…&since=…&until=…
//	Authorization: Bearer <token from token_env>   (when token_env is set)
//	→ 200 {"matches":[{"id":"…","created_at":"…","recipient":"…","payload_hash":"…"}]}
//
// {"matches":[]} means "searched, found none"; any other status, a
// malformed body or a missing matches field is a failed lookup.
package httplookup

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/sweeper/sweeper/providers"
)

// Kind is the http adapter's kind, for the explicit list in cmd/sweeper.
var Kind = providers.Kind{Name: "http", NewSettings: func() providers.Settings { return &Config{} }}

// Config is the kind-specific part of an http provider block.
type Config struct {
	// URL is the lookup endpoint, http or https. Required.
	URL string `toml:"url"`
	// TokenEnv names the environment variable holding a bearer token; empty
	// sends no Authorization header.
	TokenEnv string `toml:"token_env"`
}

// Validate implements providers.Settings.
func (c *Config) Validate() []error {
	var errs []error
	switch u, err := url.Parse(c.URL); {
	case c.URL == "":
		errs = append(errs, errors.New("url: required"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("url: must be an absolute http or https URL"))
	case u.User != nil:
		errs = append(errs, errors.New("url: must not carry credentials; use token_env"))
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "token_env", Name: c.TokenEnv, Required: c.TokenEnv != ""}}
}
