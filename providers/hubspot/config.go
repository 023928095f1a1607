package hubspot

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// CRM object types a block can name in its object key.
const (
	ObjectContacts = "contacts"
	ObjectDeals    = "deals"
	ObjectNotes    = "notes"
)

// objects are the object types the adapter reads, in the order errors list
// them.
var objects = []string{ObjectContacts, ObjectDeals, ObjectNotes}

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultAPIBase  = "https://api.hubapi.com"
	DefaultProperty = "op_key"
	// DefaultSettleWindow covers HubSpot's search index, which HubSpot
	// documents as eventually consistent (seconds); a block whose property
	// is unique reads the record directly and may set settle_window "0s".
	DefaultSettleWindow = 5 * time.Minute
	// maxPayloadProperties bounds payload_properties.
	maxPayloadProperties = 10
)

// defaultPayload is each object type's payload_properties when the block
// names none: one property a workflow sets, compared as HubSpot returns it.
var defaultPayload = map[string][]string{
	ObjectContacts: {"email"},
	ObjectDeals:    {"dealname"},
	ObjectNotes:    {"hs_note_body"},
}

// Config is the kind-specific part of a hubspot provider block.
type Config struct {
	// AccessTokenEnv names the environment variable holding a private
	// app's access token (NAME_FILE, a file holding it, works too), sent as
	// a Bearer token. A token with read scopes on the object type is all
	// this adapter should be given. Required.
	AccessTokenEnv string `toml:"access_token_env"`
	// APIBase is where requests go instead of https://api.hubapi.com, for
	// tests against a fake: an absolute http or https URL whose path is kept
	// as a prefix. Default "" (HubSpot's).
	APIBase string `toml:"api_base"`
	// Object is the CRM object type the workflow creates: "contacts",
	// "deals" or "notes". Required.
	Object string `toml:"object"`
	// Property is the internal name of the custom property in which the
	// workflow stores the ledger's op_key: lowercase letters, digits and
	// '_', starting with a letter, at most 100. Default "op_key".
	Property string `toml:"property"`
	// UniqueProperty says the property was created with
	// hasUniqueValue=true: the record is then read by it directly
	// (exact), not searched for (eventually consistent). Default false.
	UniqueProperty bool `toml:"unique_property"`
	// PayloadProperties are the properties whose values, as HubSpot
	// returns them, make the record's payload hash. Default: the object
	// type's (contacts ["email"], deals ["dealname"], notes
	// ["hs_note_body"]).
	PayloadProperties []string `toml:"payload_properties"`
}

// newConfig returns a Config holding the defaults.
func newConfig() *Config {
	return &Config{Property: DefaultProperty}
}

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
	_ providers.Defaulter    = (*Config)(nil)
)

// ApplyDefaults implements providers.Defaulter: no payload_properties are
// the object type's.
func (c *Config) ApplyDefaults() {
	if len(c.PayloadProperties) == 0 {
		c.PayloadProperties = slices.Clone(defaultPayload[c.Object])
	}
}

// propertyRE is a HubSpot property's internal name.
var propertyRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,99}$`)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. access_token_env is checked through SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	if err := providers.CheckAPIBase(c.APIBase, "access_token_env"); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(objects, c.Object) {
		errs = append(errs, fmt.Errorf("object: must be one of %s", strings.Join(objects, ", ")))
	}
	if !propertyRE.MatchString(c.Property) {
		errs = append(errs, errors.New("property: must be a property's internal name: lowercase letters, digits and '_', starting with a letter, at most 100"))
	}
	if len(c.PayloadProperties) > maxPayloadProperties {
		errs = append(errs, fmt.Errorf("payload_properties: at most %d", maxPayloadProperties))
	}
	for i, p := range c.PayloadProperties {
		switch {
		case !propertyRE.MatchString(p):
			errs = append(errs, fmt.Errorf("payload_properties: %q is not a property's internal name", p))
		case slices.Contains(c.PayloadProperties[:i], p):
			errs = append(errs, fmt.Errorf("payload_properties: %q is listed twice", p))
		}
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: access_token_env is
// required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "access_token_env", Name: c.AccessTokenEnv, Required: true}}
}
