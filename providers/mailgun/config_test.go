package mailgun_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/mailgun"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := mailgun.Kind.NewSettings().(*mailgun.Config)
	if cfg.Region != "us" || cfg.APIBase != "" || cfg.Variable != "op_key" || mailgun.Kind.SettleWindow != 30*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
	cfg.Domain = domain
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("the defaults with a domain do not validate: %v", errs)
	}
	want := []providers.SecretEnv{{Key: "api_key_env", Name: "", Required: true}}
	if diff := cmp.Diff(want, cfg.SecretEnvs()); diff != "" {
		t.Errorf("SecretEnvs (-want +got):\n%s", diff)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := mailgun.Kind.NewSettings().(*mailgun.Config)
	const block = `
api_key_env = "MAILGUN_API_KEY"
domain = "mg.acme.example"
region = "eu"
api_base = "http://127.0.0.1:8025"
variable = "sweeper_op"
`
	md, err := toml.Decode(block, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Undecoded()) != 0 {
		t.Errorf("keys without a field: %v", md.Undecoded())
	}
	if cfg.APIKeyEnv != "MAILGUN_API_KEY" || cfg.Domain != domain || cfg.Region != "eu" || cfg.APIBase != "http://127.0.0.1:8025" ||
		cfg.Variable != "sweeper_op" {
		t.Errorf("decoded %+v", cfg)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("Validate: %v", errs)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		block  string
		change func(*mailgun.Config)
		want   []string
	}{
		{desc: "no domain", change: func(c *mailgun.Config) { c.Domain = "" },
			want: []string{"domain: required: the sending domain whose events are searched"}},
		{desc: "a domain with a path", change: func(c *mailgun.Config) { c.Domain = "mg.acme.example/messages" },
			want: []string{"domain: must be a domain name, e.g. mg.example.com"}},
		{desc: "a domain without a dot", change: func(c *mailgun.Config) { c.Domain = "localhost" },
			want: []string{"domain: must be a domain name, e.g. mg.example.com"}},
		{desc: "a domain label too long", change: func(c *mailgun.Config) { c.Domain = strings.Repeat("a", 64) + ".example" },
			want: []string{"domain: must be a domain name, e.g. mg.example.com"}},
		{desc: "an unknown region", change: func(c *mailgun.Config) { c.Region = "ap" },
			want: []string{`region: must be "us" or "eu"`}},
		{desc: "api_base not a URL", change: func(c *mailgun.Config) { c.APIBase = "api.mailgun.net" },
			want: []string{"api_base: must be an absolute http or https URL"}},
		{desc: "api_base with credentials", change: func(c *mailgun.Config) { c.APIBase = "https://api:key-1@api.mailgun.net" },
			want: []string{"api_base: must not carry credentials; use api_key_env"}},
		{desc: "api_base with a query", change: func(c *mailgun.Config) { c.APIBase = "https://api.mailgun.net/?x=1" },
			want: []string{"api_base: must not have a query or a fragment"}},
		{desc: "variable empty", change: func(c *mailgun.Config) { c.Variable = "" },
			want: []string{"variable: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{desc: "variable with v: prefix", change: func(c *mailgun.Config) { c.Variable = "v:op_key" },
			want: []string{"variable: must be 1-40 letters, digits, '_', '-' or '.'"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := mailgun.Kind.NewSettings().(*mailgun.Config)
			cfg.Domain = domain
			if tc.block != "" {
				if _, err := toml.Decode(tc.block, cfg); err != nil {
					t.Fatal(err)
				}
			}
			if tc.change != nil {
				tc.change(cfg)
			}
			var got []string
			for _, err := range cfg.Validate() {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKindNew(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(apiKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc    string
		keyEnv  string
		env     map[string]string
		wantErr string
	}{
		{desc: "key from the environment", keyEnv: "K", env: map[string]string{"K": apiKey}},
		{desc: "key from a file", keyEnv: "K", env: map[string]string{"K_FILE": keyFile}},
		{desc: "variable unset", keyEnv: "K", wantErr: "api_key_env: environment variable K is not set (nor K_FILE)"},
		{desc: "no variable named", env: map[string]string{"": apiKey}, wantErr: "api_key_env: required: the name of an environment variable"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := mailgun.Kind.NewSettings().(*mailgun.Config)
			cfg.APIKeyEnv, cfg.Domain = tc.keyEnv, domain
			l, err := mailgun.Kind.New("mailer", cfg, providers.Env{Getenv: func(k string) string { return tc.env[k] }})
			if tc.wantErr == "" {
				if err != nil || l == nil {
					t.Fatalf("Kind.New = %v, %v", l, err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("Kind.New error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
