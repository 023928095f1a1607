package postmark_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postmark"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := postmark.Kind.NewSettings().(*postmark.Config)
	if cfg.APIBase != "https://api.postmarkapp.com" || cfg.MetadataKey != "op_key" || cfg.MessageStream != "" || postmark.Kind.SettleWindow != 5*time.Minute {
		t.Errorf("defaults %+v", cfg)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
	want := []providers.SecretEnv{{Key: "server_token_env", Name: "", Required: true}}
	if diff := cmp.Diff(want, cfg.SecretEnvs()); diff != "" {
		t.Errorf("SecretEnvs (-want +got):\n%s", diff)
	}
}

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	cfg := postmark.Kind.NewSettings().(*postmark.Config)
	const block = `
server_token_env = "POSTMARK_SERVER_TOKEN"
api_base = "http://127.0.0.1:8025/postmark"
metadata_key = "sweeper_op"
message_stream = "broadcast"
`
	md, err := toml.Decode(block, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Undecoded()) != 0 {
		t.Errorf("keys without a field: %v", md.Undecoded())
	}
	if cfg.ServerTokenEnv != "POSTMARK_SERVER_TOKEN" || cfg.APIBase != "http://127.0.0.1:8025/postmark" || cfg.MetadataKey != "sweeper_op" ||
		cfg.MessageStream != "broadcast" {
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
		change func(*postmark.Config)
		want   []string
	}{
		{desc: "api_base not a URL", change: func(c *postmark.Config) { c.APIBase = "api.postmarkapp.com" },
			want: []string{"api_base: must be an absolute http or https URL"}},
		{desc: "api_base with credentials", change: func(c *postmark.Config) { c.APIBase = "https://token:x@api.postmarkapp.com" },
			want: []string{"api_base: must not carry credentials; use server_token_env"}},
		{desc: "api_base with a query", change: func(c *postmark.Config) { c.APIBase = "https://api.postmarkapp.com/?count=1" },
			want: []string{"api_base: must not have a query or a fragment"}},
		{desc: "empty api_base is Postmark's", change: func(c *postmark.Config) { c.APIBase = "" }},
		{desc: "metadata_key empty", change: func(c *postmark.Config) { c.MetadataKey = "" },
			want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{desc: "metadata_key with an ampersand", change: func(c *postmark.Config) { c.MetadataKey = "op&count=1" },
			want: []string{"metadata_key: must be 1-40 letters, digits, '_', '-' or '.'"}},
		{desc: "message_stream with a space", change: func(c *postmark.Config) { c.MessageStream = "my stream" },
			want: []string{"message_stream: must be a stream id: 1-64 letters, digits, '_' or '-'"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := postmark.Kind.NewSettings().(*postmark.Config)
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
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(serverToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc     string
		tokenEnv string
		env      map[string]string
		wantErr  string
	}{
		{desc: "token from the environment", tokenEnv: "T", env: map[string]string{"T": serverToken}},
		{desc: "token from a file", tokenEnv: "T", env: map[string]string{"T_FILE": tokenFile}},
		{desc: "variable unset", tokenEnv: "T", wantErr: "server_token_env: environment variable T is not set (nor T_FILE)"},
		{desc: "both set", tokenEnv: "T", env: map[string]string{"T": serverToken, "T_FILE": tokenFile}, wantErr: "server_token_env: both T and T_FILE are set; set only one"},
		{desc: "no variable named", env: map[string]string{"": serverToken}, wantErr: "server_token_env: required: the name of an environment variable"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := postmark.Kind.NewSettings().(*postmark.Config)
			cfg.ServerTokenEnv = tc.tokenEnv
			l, err := postmark.Kind.New("mailer", cfg, providers.Env{Getenv: func(k string) string { return tc.env[k] }})
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
