package config

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/BurntSushi/toml"
)

// WriteTOML writes the effective configuration — defaults applied, the
// environment's overrides in — as TOML that Parse accepts. No secret is
// written: the database URL is printed without its password (a masked
// one would be a password in the file, which Parse refuses), and each
// credential is shown by the name of its variable and whether it is set.
func (c *Config) WriteTOML(w io.Writer, getenv Getenv) error {
	view := *c
	var stripped bool
	view.Database.URL, stripped = withoutSecrets(c.Database.URL)
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(view); err != nil {
		return err
	}
	if len(c.Providers) > 0 {
		blocks := map[string]map[string]any{}
		for name, p := range c.Providers {
			block, err := toMap(p)
			if err != nil {
				return err
			}
			if p.Settings != nil {
				settings, err := toMap(p.Settings)
				if err != nil {
					return err
				}
				for k, v := range settings {
					block[k] = v
				}
			}
			blocks[name] = block
		}
		buf.WriteString("\n")
		if err := enc.Encode(map[string]any{"providers": blocks}); err != nil {
			return err
		}
	}
	buf.WriteString("\n# Secrets (values are never shown)\n")
	if stripped {
		// Only the environment can have put a password in the URL.
		fmt.Fprintf(&buf, "# database.url is printed without its password (%s has it)\n", EnvDatabaseURL)
	}
	for _, s := range c.secrets() {
		state := "not set"
		if SecretSet(getenv, s.Name) {
			state = "set"
		}
		fmt.Fprintf(&buf, "# %s = %s (%s)\n", s.Name, state, s.Key)
	}
	var notes []string
	for _, name := range sortedKeys(c.Providers) {
		if noter, ok := c.Providers[name].Settings.(Noter); ok {
			for _, n := range noter.Notes() {
				notes = append(notes, "providers."+name+"."+n)
			}
		}
	}
	if len(notes) > 0 {
		buf.WriteString("\n# Notes\n")
		for _, n := range notes {
			fmt.Fprintf(&buf, "# %s\n", n)
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// secrets lists every environment variable the configuration reads a
// credential from.
func (c *Config) secrets() []SecretEnv {
	out := []SecretEnv{
		{Key: "overrides database.url; may hold the password", Name: EnvDatabaseURL},
		{Key: "needed by slack.channel", Name: EnvSlackToken, Required: c.Slack.Channel != ""},
		{Key: "verifies Slack button clicks; needed by slack.channel", Name: EnvSlackSigning, Required: c.Slack.Channel != ""},
		{Key: "River UI basic auth user; needed by http.river_ui", Name: EnvRiverUIUser, Required: c.HTTP.RiverUI},
		{Key: "River UI basic auth password; needed by http.river_ui", Name: EnvRiverUIPass, Required: c.HTTP.RiverUI},
		{Key: "signs the review page's sessions; needed by web.enabled", Name: EnvWebCookieKey, Required: c.Web.Enabled},
		{Key: "Sign in with Slack's client secret; needed by web.auth = \"slack\"", Name: EnvSlackClientSecret,
			Required: c.Web.Enabled && c.Web.Auth == WebAuthSlack},
	}
	if c.PagerDuty.RoutingKeyEnv != "" {
		out = append(out, SecretEnv{Key: "pagerduty.routing_key_env", Name: c.PagerDuty.RoutingKeyEnv, Required: true})
	}
	if c.Webhook.SecretEnv != "" {
		out = append(out, SecretEnv{Key: "webhook.secret_env", Name: c.Webhook.SecretEnv, Required: c.Webhook.On()})
	}
	for _, name := range sortedKeys(c.Providers) {
		if holder, ok := c.Providers[name].Settings.(SecretHolder); ok {
			for _, s := range holder.SecretEnvs() {
				if s.Name != "" {
					s.Key = "providers." + name + "." + s.Key
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// toMap turns a struct into its TOML keys and values.
func toMap(v any) (map[string]any, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	m := map[string]any{}
	_, err := toml.Decode(buf.String(), &m)
	return m, err
}

// withoutSecrets returns a database URL without its user info password and
// its non-empty password parameters, and whether there were any. A URL
// with none is returned as written, not as net/url would re-encode it, so
// the printed configuration loads as the same one.
func withoutSecrets(raw string) (string, bool) {
	if !hasPassword(raw) {
		return raw, false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)", true
	}
	if name := u.User.Username(); name != "" {
		u.User = url.User(name)
	} else {
		u.User = nil
	}
	q := u.Query()
	for key, values := range q {
		if isPasswordParam(key) && strings.Join(values, "") != "" {
			q.Del(key)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), true
}

// RedactURL masks the password of a database URL for display.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	q := u.Query()
	masked := false
	for key, values := range q {
		// An empty parameter holds no secret, and masking it would make
		// the printed URL one that Parse rejects (see hasPassword).
		if isPasswordParam(key) && strings.Join(values, "") != "" {
			q.Set(key, "xxxxx")
			masked = true
		}
	}
	if _, hasPassword := u.User.Password(); !masked && !hasPassword {
		// Nothing to hide: the URL as written, not as net/url would
		// re-encode it, so the printed configuration loads as the same one.
		return raw
	}
	if masked {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
