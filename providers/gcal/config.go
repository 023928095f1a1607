package gcal

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/sweeper/sweeper/providers"
)

// Defaults applied by [Kind]'s NewSettings.
const (
	DefaultAPIBase      = "https://www.googleapis.com"
	DefaultTokenURL     = "https://oauth2.googleapis.com/token"
	DefaultPropertyKey  = "op_key"
	DefaultSettleWindow = 5 * time.Minute
)

// Config is the kind-specific part of a google_calendar provider block: one
// calendar per block.
type Config struct {
	// CalendarID is the calendar the workflow books into ("primary" is the
	// service account's own; a shared calendar's id looks like an email
	// address). Required.
	CalendarID string `toml:"calendar_id"`
	// CredentialsEnv names the environment variable holding the service
	// account's JSON key (NAME_FILE, a file holding it, works too: the
	// usual way, the key being a file). Required.
	CredentialsEnv string `toml:"credentials_env"`
	// APIBase is the address of Google's API, overridden for tests and
	// proxies. Default https://www.googleapis.com.
	APIBase string `toml:"api_base"`
	// TokenURL is where the signed JWT is exchanged for an access token
	// (OAuth 2.0 JWT bearer grant), overridden for tests. Default
	// https://oauth2.googleapis.com/token.
	TokenURL string `toml:"token_url"`
	// PropertyKey is the private extended property under which the workflow
	// stores the ledger's op_key on the event. Default "op_key".
	PropertyKey string `toml:"property_key"`
	// EventIDFromOpKey says the workflow also sets the event's id from the
	// op_key ([EventID]): the event is then read by id as well.
	EventIDFromOpKey bool `toml:"event_id_from_op_key"`
}

// newConfig returns a Config holding the defaults.
func newConfig() *Config {
	return &Config{APIBase: DefaultAPIBase, TokenURL: DefaultTokenURL, PropertyKey: DefaultPropertyKey}
}

var (
	_ providers.Settings     = (*Config)(nil)
	_ providers.SecretHolder = (*Config)(nil)
)

// Validate implements providers.Settings. Each message starts with the key
// it concerns. credentials_env is checked by the configuration, through
// SecretEnvs.
func (c *Config) Validate() []error {
	var errs []error
	if err := checkCalendarID(c.CalendarID); err != nil {
		errs = append(errs, err)
	}
	if err := providers.CheckAPIBase(c.APIBase, "credentials_env"); err != nil {
		errs = append(errs, err)
	}
	if err := checkTokenURL(c.TokenURL); err != nil {
		errs = append(errs, err)
	}
	if err := providers.CheckKeyName("property_key", c.PropertyKey); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// SecretEnvs implements providers.SecretHolder: credentials_env is
// required.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "credentials_env", Name: c.CredentialsEnv, Required: true}}
}

// checkCalendarID accepts 1-255 printable characters without spaces: a
// calendar id is an address-like string or "primary", sent escaped in the
// path.
func checkCalendarID(id string) error {
	if id == "" || len(id) > 255 || strings.ContainsFunc(id, func(r rune) bool {
		return r == '/' || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) {
		return errors.New("calendar_id: required: 1-255 printable characters, no spaces or '/' (\"primary\", or an id like abc@group.calendar.google.com)")
	}
	return nil
}

// checkTokenURL accepts empty (Google's) or an absolute http or https URL
// without credentials, query or fragment.
func checkTokenURL(raw string) error {
	if raw == "" {
		return nil
	}
	if err := providers.CheckBaseURL(raw, "credentials_env"); err != nil {
		return fmt.Errorf("token_url: %w", err)
	}
	if u, _ := url.Parse(raw); u.RawQuery != "" || u.ForceQuery {
		return errors.New("token_url: must not have a query or a fragment")
	}
	return nil
}
