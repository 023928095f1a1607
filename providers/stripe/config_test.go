package stripe_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/stripe"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := stripe.Kind.NewSettings().(*stripe.Config)
	if cfg.APIBase != "https://api.stripe.com" || cfg.MetadataKey != "op_key" ||
		!cmp.Equal(cfg.Objects, []string{"payment_intents"}) || stripe.Kind.SettleWindow != 10*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
	want := []providers.SecretEnv{{Key: "secret_key_env", Name: "", Required: true}}
	if diff := cmp.Diff(want, cfg.SecretEnvs()); diff != "" {
		t.Errorf("SecretEnvs (-want +got):\n%s", diff)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := stripe.Kind.NewSettings().(*stripe.Config)
	const block = `
secret_key_env = "STRIPE_RESTRICTED_KEY"
api_base = "http://127.0.0.1:12111"
metadata_key = "sweeper_op"
objects = ["charges", "payment_intents"]
`
	md, err := toml.Decode(block, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Undecoded()) != 0 {
		t.Errorf("keys without a field: %v", md.Undecoded())
	}
	if cfg.SecretKeyEnv != "STRIPE_RESTRICTED_KEY" || cfg.APIBase != "http://127.0.0.1:12111" || cfg.MetadataKey != "sweeper_op" ||
		!cmp.Equal(cfg.Objects, []string{"charges", "payment_intents"}) {
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
		change func(*stripe.Config)
		want   []string
	}{
		{desc: "api_base not a URL", change: func(c *stripe.Config) { c.APIBase = "api.stripe.com" },
			want: []string{"api_base: must be an absolute http or https URL"}},
		{desc: "api_base ftp", change: func(c *stripe.Config) { c.APIBase = "ftp://api.stripe.com" },
			want: []string{"api_base: must be an absolute http or https URL"}},
		{desc: "api_base with credentials", change: func(c *stripe.Config) { c.APIBase = "https://sk_live_x:@api.stripe.com" },
			want: []string{"api_base: must not carry credentials; use secret_key_env"}},
		{desc: "api_base with a query", change: func(c *stripe.Config) { c.APIBase = "https://api.stripe.com/?x=1" },
			want: []string{"api_base: must not have a query or a fragment"}},
		{desc: "empty api_base is Stripe's", change: func(c *stripe.Config) { c.APIBase = "" }},
		{desc: "metadata_key empty", change: func(c *stripe.Config) { c.MetadataKey = "" },
			want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{desc: "metadata_key with a quote", change: func(c *stripe.Config) { c.MetadataKey = "op']:'x" },
			want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{desc: "metadata_key too long", change: func(c *stripe.Config) { c.MetadataKey = strings.Repeat("k", 41) },
			want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{desc: "no objects", change: func(c *stripe.Config) { c.Objects = nil },
			want: []string{"objects: at least one of payment_intents, charges"}},
		{desc: "unknown object", change: func(c *stripe.Config) { c.Objects = []string{"payment_intents", "invoices"} },
			want: []string{`objects: unknown object type "invoices": one of payment_intents, charges`}},
		{desc: "object twice", change: func(c *stripe.Config) { c.Objects = []string{"charges", "charges"} },
			want: []string{`objects: "charges" is listed twice`}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := stripe.Kind.NewSettings().(*stripe.Config)
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
	secretFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secretFile, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc    string
		keyEnv  string
		env     map[string]string
		wantErr string
	}{
		{desc: "key from the environment", keyEnv: "K", env: map[string]string{"K": testKey}},
		{desc: "key from a file", keyEnv: "K", env: map[string]string{"K_FILE": secretFile}},
		{desc: "variable unset", keyEnv: "K", wantErr: "secret_key_env: environment variable K is not set (nor K_FILE)"},
		{desc: "no variable named", keyEnv: "", env: map[string]string{"": testKey}, wantErr: "secret_key_env: required: the name of an environment variable"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := stripe.Kind.NewSettings().(*stripe.Config)
			cfg.SecretKeyEnv = tc.keyEnv
			l, err := stripe.Kind.New("payments", cfg, providers.Env{Getenv: func(k string) string { return tc.env[k] }})
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
