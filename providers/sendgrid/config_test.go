package sendgrid_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/sendgrid"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := sendgrid.Kind.NewSettings().(*sendgrid.Config)
	if cfg.Region != "global" || cfg.APIBase != "" || cfg.CustomArg != "op_key" || sendgrid.Kind.SettleWindow != 5*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
	want := []providers.SecretEnv{{Key: "api_key_env", Name: "", Required: true}}
	if diff := cmp.Diff(want, cfg.SecretEnvs()); diff != "" {
		t.Errorf("SecretEnvs (-want +got):\n%s", diff)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := sendgrid.Kind.NewSettings().(*sendgrid.Config)
	const block = `
api_key_env = "SENDGRID_API_KEY"
region = "eu"
api_base = "http://127.0.0.1:3030"
custom_arg = "sweeper_op"
`
	md, err := toml.Decode(block, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Undecoded()) != 0 {
		t.Errorf("keys without a field: %v", md.Undecoded())
	}
	if cfg.APIKeyEnv != "SENDGRID_API_KEY" || cfg.Region != "eu" || cfg.APIBase != "http://127.0.0.1:3030" ||
		cfg.CustomArg != "sweeper_op" {
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
		change func(*sendgrid.Config)
		want   []string
	}{
		{desc: "an unknown region", change: func(c *sendgrid.Config) { c.Region = "us" },
			want: []string{`region: must be "global" or "eu"`}},
		{desc: "api_base not a URL", change: func(c *sendgrid.Config) { c.APIBase = "api.sendgrid.com" },
			want: []string{"api_base: must be an absolute http or https URL"}},
		{desc: "api_base with credentials", change: func(c *sendgrid.Config) { c.APIBase = "https://apikey:SG.x@api.sendgrid.com" },
			want: []string{"api_base: must not carry credentials; use api_key_env"}},
		{desc: "api_base with a query", change: func(c *sendgrid.Config) { c.APIBase = "https://api.sendgrid.com/?x=1" },
			want: []string{"api_base: must not have a query or a fragment"}},
		{desc: "custom_arg empty", change: func(c *sendgrid.Config) { c.CustomArg = "" },
			want: []string{"custom_arg: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{desc: "custom_arg with a quote", change: func(c *sendgrid.Config) { c.CustomArg = `op"key` },
			want: []string{"custom_arg: must be 1-40 letters, digits, '_', '-' or '.'"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := sendgrid.Kind.NewSettings().(*sendgrid.Config)
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
			cfg := sendgrid.Kind.NewSettings().(*sendgrid.Config)
			cfg.APIKeyEnv = tc.keyEnv
			l, err := sendgrid.Kind.New("mailer", cfg, providers.Env{Getenv: func(k string) string { return tc.env[k] }})
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
