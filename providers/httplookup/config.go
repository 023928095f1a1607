package httplookup

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/sweeper/sweeper/providers"
)

// newConfig returns the settings an http block is decoded over: empty,
// since each default stands for a zero too and is applied by
// [Config.ApplyDefaults].
func newConfig() *Config { return &Config{} }

// Config is the kind-specific part of an http provider block.
type Config struct {
	// URL is the lookup endpoint, http or https. Required.
	URL string `toml:"url"`
	// TokenEnv names the environment variable holding a bearer token; empty
	// sends no Authorization header.
	TokenEnv string `toml:"token_env"`
	// SearchBy says how the endpoint finds records: "op_key" (the default:
	// the provider holds the key, so a record names its operation) or
	// "resemblance" (by recipient, payload and time: a record is proof only
	// inside the operation's own window and when no other operation could
	// own it).
	SearchBy string `toml:"search_by"`
	// MaxBatch is how many operations the endpoint answers for in one
	// request, in the batch form (see the package doc), 1 to [MaxMaxBatch].
	// Default 1: the single form, one request per operation. Only an
	// endpoint that searches by op_key can batch.
	MaxBatch int `toml:"max_batch"`
	// List says the endpoint also answers a listing (see the package
	// doc): GET {url}?since=…&until=… without op_key, every record dated
	// in the window that carries an op_key, each with it — for the
	// audit's report of records no ledger row names. Only an endpoint
	// that searches by op_key can. Default false.
	List bool `toml:"list"`
}

// MaxMaxBatch is the largest max_batch: 50 op_keys of up to 100 bytes,
// escaped, stay within [MaxURL].
const MaxMaxBatch = 50

// MaxURL is the longest URL the batch form sends, in bytes: proxies and
// servers commonly refuse longer ones (8 KB). A batch whose op_keys would
// make it longer is sent as several requests.
const MaxURL = 6 << 10

// SearchBy values.
const (
	SearchByKey         = "op_key"
	SearchByResemblance = "resemblance"
)

// ApplyDefaults implements providers.Defaulter: search_by "" is
// [SearchByKey], max_batch 0 is 1 (the single form).
func (c *Config) ApplyDefaults() {
	if c.SearchBy == "" {
		c.SearchBy = SearchByKey
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 1
	}
}

// Validate implements providers.Settings.
func (c *Config) Validate() []error {
	var errs []error
	switch c.SearchBy {
	case "", SearchByKey, SearchByResemblance:
	default:
		errs = append(errs, fmt.Errorf("search_by: must be %q or %q", SearchByKey, SearchByResemblance))
	}
	switch {
	case c.MaxBatch < 0 || c.MaxBatch > MaxMaxBatch:
		errs = append(errs, fmt.Errorf("max_batch: must be between 1 and %d", MaxMaxBatch))
	case c.MaxBatch > 1 && c.SearchBy == SearchByResemblance:
		errs = append(errs, fmt.Errorf("max_batch: an endpoint that searches by resemblance answers one operation per request: remove max_batch or set search_by = %q", SearchByKey))
	}
	if c.List && c.SearchBy == SearchByResemblance {
		errs = append(errs, fmt.Errorf("list: an endpoint that searches by resemblance has no op_key on its records to list: remove list or set search_by = %q", SearchByKey))
	}
	switch u, err := url.Parse(c.URL); {
	case c.URL == "":
		errs = append(errs, errors.New("url: required"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, errors.New("url: must be an absolute http or https URL"))
	case u.User != nil:
		errs = append(errs, errors.New("url: must not carry credentials; use token_env"))
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "token_env", Name: c.TokenEnv, Required: c.TokenEnv != ""}}
}
