package providertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
)

// ConfigCase is one provider block and what its Validate must say.
type ConfigCase[C providers.Settings] struct {
	Desc string
	// Block is TOML decoded over the valid settings; each of its keys must
	// be one of the kind's.
	Block string
	// Change edits the settings after Block.
	Change func(C)
	// Want are Validate's messages, in order; none: the block is valid.
	Want []string
}

// ConfigCases checks an adapter's Validate, case by case, each a parallel
// subtest: it starts from kind's defaults, edits them with valid (nil: the
// defaults are valid), decodes the case's Block over them, applies its
// Change, and compares the messages of Validate with Want.
func ConfigCases[C providers.Settings](t *testing.T, kind providers.Kind, valid func(C), cases []ConfigCase[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Desc, func(t *testing.T) {
			t.Parallel()
			cfg := settings[C](t, kind)
			if valid != nil {
				valid(cfg)
			}
			if tc.Block != "" {
				md, err := toml.Decode(tc.Block, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if keys := md.Undecoded(); len(keys) != 0 {
					t.Fatalf("keys the %s kind does not have: %v", kind.Name, keys)
				}
			}
			if tc.Change != nil {
				tc.Change(cfg)
			}
			var got []string
			for _, err := range cfg.Validate() {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.Want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

// ConfigDefaults returns kind's defaults for the caller to check, after
// checking that they validate once edited by valid (nil: as they are) and
// that their SecretEnvs are secrets.
func ConfigDefaults[C providers.Settings](t *testing.T, kind providers.Kind, valid func(C), secrets []providers.SecretEnv) C {
	t.Helper()
	edited := settings[C](t, kind)
	if valid != nil {
		valid(edited)
	}
	if errs := edited.Validate(); len(errs) != 0 {
		t.Errorf("the defaults do not validate: %v", errs)
	}
	holder, ok := any(edited).(providers.SecretHolder)
	if !ok {
		t.Fatalf("%s: settings %T name no secrets", kind.Name, edited)
	}
	if diff := cmp.Diff(secrets, holder.SecretEnvs()); diff != "" {
		t.Errorf("SecretEnvs (-want +got):\n%s", diff)
	}
	return settings[C](t, kind)
}

// ConfigDecode decodes block over kind's defaults, as the kind's keys of a
// provider block are, and returns the settings for the caller to check,
// after checking that every key of block has a field and that the result
// validates.
func ConfigDecode[C providers.Settings](t *testing.T, kind providers.Kind, block string) C {
	t.Helper()
	cfg := settings[C](t, kind)
	md, err := toml.Decode(block, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if keys := md.Undecoded(); len(keys) != 0 {
		t.Errorf("keys without a field: %v", keys)
	}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("Validate: %v", errs)
	}
	return cfg
}

// SecretCases checks how kind's New reads the credential its block names
// under key (e.g. "api_key_env"): from the variable, from the file NAME_FILE
// names (its trailing newline dropped), and the errors for the variable
// unset, both set, and no variable named, each naming key and never the
// value. name sets the variable's name in valid settings (nil: the
// defaults are valid); any other credential the kind reads must be set
// by env. secret is the value the variable holds.
func SecretCases[C providers.Settings](t *testing.T, kind providers.Kind, key string, name func(C, string), secret string, env map[string]string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc    string
		name    string
		env     map[string]string
		wantErr string
	}{
		{desc: "from the environment", name: "S", env: map[string]string{"S": secret}},
		{desc: "from a file", name: "S", env: map[string]string{"S_FILE": file}},
		{desc: "variable unset", name: "S", wantErr: key + ": environment variable S is not set (nor S_FILE)"},
		{desc: "both set", name: "S", env: map[string]string{"S": secret, "S_FILE": file}, wantErr: key + ": both S and S_FILE are set; set only one"},
		{desc: "no variable named", env: map[string]string{"": secret}, wantErr: key + ": required: the name of an environment variable"},
	} {
		t.Run(key+" "+tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := settings[C](t, kind)
			name(cfg, tc.name)
			getenv := func(k string) string {
				if v, ok := tc.env[k]; ok {
					return v
				}
				return env[k]
			}
			l, err := kind.New("block", cfg, providers.Env{Getenv: getenv})
			if c, ok := l.(interface{ Close() }); ok {
				t.Cleanup(c.Close)
			}
			if tc.wantErr == "" {
				if err != nil || l == nil {
					t.Fatalf("Kind.New = %v, %v", l, err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("Kind.New error %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error carries the secret: %v", err)
			}
		})
	}
}

// settings returns kind's defaults as a C.
func settings[C providers.Settings](t testing.TB, kind providers.Kind) C {
	t.Helper()
	cfg, ok := kind.NewSettings().(C)
	if !ok {
		t.Fatalf("%s: settings are %T", kind.Name, kind.NewSettings())
	}
	return cfg
}
