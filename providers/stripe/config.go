package stripe

import (
	"fmt"
	"slices"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v82"

	"github.com/sweeper/sweeper/providers"
)

// Object types the adapter can search, as named by the objects key. Each is
// one Stripe Search endpoint: /v1/{name}/search.
const (
	ObjectPaymentIntents = "payment_intents"
	ObjectCharges        = "charges"
	// ObjectInvoices is searched like the others, except for an operation
	// whose recipient is a customer id (cus_…): then the customer's
	// invoices are listed instead (GET /v1/invoices?customer=…), which is
	// exact where the search lags.
	ObjectInvoices = "invoices"
)

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultMetadataKey  = "op_key"
	DefaultSettleWindow = 10 * time.Minute
)

// Config is the kind-specific part of a stripe provider block.
type Config struct {
	// SecretKeyEnv names the environment variable holding the Stripe secret
	// key (NAME_FILE, a file holding it, works too). A restricted key with
	// read access to PaymentIntents, Charges and Invoices is enough, and is all this
	// adapter should be given. Required; no default. Its presence is checked
	// through SecretEnvs, with the other credentials.
	SecretKeyEnv string `toml:"secret_key_env"`
	// APIBase is the address of Stripe's API, overridden for tests against a
	// fake or stripe-mock: an absolute http or https URL. Default
	// https://api.stripe.com.
	APIBase string `toml:"api_base"`
	// MetadataKey is the metadata key under which workflows store the
	// ledger's op_key on the PaymentIntent or Charge: 1-40 letters, digits,
	// '_', '-' or '.'. Default "op_key".
	MetadataKey string `toml:"metadata_key"`
	// Objects are the Stripe object types searched for an operation,
	// "payment_intents", "charges" and/or "invoices". Default
	// ["payment_intents"].
	Objects []string `toml:"objects"`
	// MaxBatch is how many operations one search asks for, as OR-joined
	// metadata clauses, 1 to [MaxClauses]. Default [MaxClauses].
	MaxBatch int `toml:"max_batch"`
}

// MaxClauses is the most clauses Stripe's search query language takes in
// one query (docs.stripe.com/search: "You can combine up to 10 query
// clauses").
const MaxClauses = 10

// newConfig returns a Config holding the defaults.
func newConfig() *Config {
	return &Config{
		APIBase:     stripego.APIURL,
		MetadataKey: DefaultMetadataKey,
		Objects:     []string{ObjectPaymentIntents},
		MaxBatch:    MaxClauses,
	}
}

// ApplyDefaults implements providers.Defaulter: max_batch 0 is
// [MaxClauses].
func (c *Config) ApplyDefaults() {
	if c.MaxBatch == 0 {
		c.MaxBatch = MaxClauses
	}
}

var _ providers.Settings = (*Config)(nil)
var _ providers.SecretHolder = (*Config)(nil)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. secret_key_env is checked by the caller, through SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	if err := providers.CheckAPIBase(c.APIBase, "secret_key_env"); err != nil {
		errs = append(errs, err)
	}
	// A plain name has none of the quotes and brackets that would need
	// escaping inside metadata['…'] in a search query; Stripe allows keys
	// up to 40 characters.
	if err := providers.CheckKeyName("metadata_key", c.MetadataKey); err != nil {
		errs = append(errs, err)
	}
	if c.MaxBatch < 0 || c.MaxBatch > MaxClauses {
		errs = append(errs, fmt.Errorf("max_batch: must be between 1 and %d: Stripe's search takes at most %d clauses in a query", MaxClauses, MaxClauses))
	}
	allowed := []string{ObjectPaymentIntents, ObjectCharges, ObjectInvoices}
	if len(c.Objects) == 0 {
		errs = append(errs, fmt.Errorf("objects: at least one of %s", strings.Join(allowed, ", ")))
	}
	for i, o := range c.Objects {
		switch {
		case !slices.Contains(allowed, o):
			errs = append(errs, fmt.Errorf("objects: unknown object type %q: one of %s", o, strings.Join(allowed, ", ")))
		case slices.Contains(c.Objects[:i], o):
			errs = append(errs, fmt.Errorf("objects: %q is listed twice", o))
		}
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: secret_key_env is required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "secret_key_env", Name: c.SecretKeyEnv, Required: true}}
}
