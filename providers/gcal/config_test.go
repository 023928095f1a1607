package gcal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/gcal"
	"github.com/sweeper/sweeper/providers/providertest"
)

func withCalendar(c *gcal.Config) { c.CalendarID = calendarID }

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDefaults[*gcal.Config](t, gcal.Kind, withCalendar, []providers.SecretEnv{{Key: "credentials_env", Name: "", Required: true}})
	if cfg.APIBase != "https://www.googleapis.com" || cfg.TokenURL != "https://oauth2.googleapis.com/token" || cfg.PropertyKey != "op_key" ||
		cfg.EventIDFromOpKey || cfg.CalendarID != "" || gcal.Kind.SettleWindow != 5*time.Minute || gcal.Kind.Name != "google_calendar" {
		t.Errorf("defaults %+v", cfg)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := providertest.ConfigDecode[*gcal.Config](t, gcal.Kind, `
calendar_id = "c_bookings@group.calendar.google.com"
credentials_env = "GCAL_SERVICE_ACCOUNT"
api_base = "http://127.0.0.1:8025/google"
token_url = "http://127.0.0.1:8025/token"
property_key = "sweeper_op"
event_id_from_op_key = true
`)
	if cfg.CalendarID != "c_bookings@group.calendar.google.com" || cfg.CredentialsEnv != "GCAL_SERVICE_ACCOUNT" || cfg.APIBase != "http://127.0.0.1:8025/google" ||
		cfg.TokenURL != "http://127.0.0.1:8025/token" || cfg.PropertyKey != "sweeper_op" || !cfg.EventIDFromOpKey {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	calErr := []string{`calendar_id: required: 1-255 printable characters, no spaces or '/' ("primary", or an id like abc@group.calendar.google.com)`}
	providertest.ConfigCases(t, gcal.Kind, withCalendar, []providertest.ConfigCase[*gcal.Config]{
		{Desc: "primary", Change: func(c *gcal.Config) { c.CalendarID = "primary" }},
		{Desc: "a holiday calendar with '#'", Change: func(c *gcal.Config) { c.CalendarID = "en.usa#holiday@group.v.calendar.google.com" }},
		{Desc: "calendar_id missing", Change: func(c *gcal.Config) { c.CalendarID = "" }, Want: calErr},
		{Desc: "calendar_id with a slash", Change: func(c *gcal.Config) { c.CalendarID = "a/../b" }, Want: calErr},
		{Desc: "calendar_id with a space", Change: func(c *gcal.Config) { c.CalendarID = "my calendar" }, Want: calErr},
		{Desc: "api_base not a URL", Change: func(c *gcal.Config) { c.APIBase = "www.googleapis.com" },
			Want: []string{"api_base: must be an absolute http or https URL"}},
		{Desc: "token_url with credentials", Change: func(c *gcal.Config) { c.TokenURL = "https://u:p@oauth2.googleapis.com/token" },
			Want: []string{"token_url: must not carry credentials; use credentials_env"}},
		{Desc: "token_url with a query", Change: func(c *gcal.Config) { c.TokenURL = "https://oauth2.googleapis.com/token?x=1" },
			Want: []string{"token_url: must not have a query or a fragment"}},
		{Desc: "empty token_url is Google's", Change: func(c *gcal.Config) { c.TokenURL = "" }},
		{Desc: "property_key with '='", Change: func(c *gcal.Config) { c.PropertyKey = "op=x" },
			Want: []string{"property_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
	})
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	providertest.SecretCases(t, gcal.Kind, "credentials_env", func(c *gcal.Config, name string) { c.CalendarID, c.CredentialsEnv = calendarID, name }, keyJSON(), nil)
}

// TestKeyRefused: a value that is no service account key fails New with an
// error naming the variable and never the value.
func TestKeyRefused(t *testing.T) {
	t.Parallel()
	for _, v := range []string{`not json`, `{"type":"authorized_user","client_id":"x","client_secret":"SECRET-x","refresh_token":"SECRET-y"}`,
		`{"type":"service_account","client_email":"a@b","private_key":"SECRET-not-pem"}`} {
		_, err := gcal.New("bookings", &gcal.Config{CalendarID: calendarID, CredentialsEnv: "K"}, providertest.Env(nil, "K", v))
		if err == nil || !strings.HasPrefix(err.Error(), "credentials_env: ") {
			t.Errorf("%.20s: %v; want an error naming credentials_env", v, err)
		} else if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "not json") {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}
