package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
)

// TestExampleConfigRefusedUntouched: a literal copy of config.example.toml
// does not run: check-config exits 2 naming each value left to choose,
// and the sim block, once uncommented, runs only with its acknowledgment.
func TestExampleConfigRefusedUntouched(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "check-config", "--config", exampleConfig)
	if r.code != exitUsage {
		t.Fatalf("code %d, want %d\n%s%s", r.code, exitUsage, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"2 problem(s):",
		"database.url: still the placeholder CHANGE-ME; set your ledger's URL here or in SWEEPER_DATABASE_URL",
		"providers.orders_api.url: still the placeholder CHANGE-ME; set it here or in SWEEPER_PROVIDERS_ORDERS_API_URL",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r = runCLI(t, exampleChoices, "check-config", "--config", exampleConfig); r.code != exitOK {
		t.Fatalf("with a database and a provider chosen: code %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "[providers.sim]") {
		t.Errorf("the example runs a sim block:\n%s", r.stdout)
	}

	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "#! [providers.sim]")
	if i < 0 {
		t.Fatal("the example has no commented-out sim block")
	}
	simBlock := strings.ReplaceAll(string(b)[i:], "\n#! ", "\n")
	simBlock = strings.TrimPrefix(simBlock, "#! ")
	for _, tc := range []struct {
		desc, text string
		wantCode   int
	}{
		{desc: "uncommented as documented", text: string(b)[:i] + simBlock, wantCode: exitOK},
		{desc: "without simulated = true", text: string(b)[:i] + strings.Replace(simBlock, "\nsimulated = true\n", "\n", 1), wantCode: exitUsage},
	} {
		file := filepath.Join(t.TempDir(), "sweeper.toml")
		if err := os.WriteFile(file, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, exampleChoices, "check-config", "--config", file)
		if r.code != tc.wantCode {
			t.Errorf("%s: code %d, want %d\n%s", tc.desc, r.code, tc.wantCode, r.stderr)
		}
		if tc.wantCode == exitUsage && !strings.Contains(r.stderr, "providers.sim.simulated: kind sim answers from the rules in this file") {
			t.Errorf("%s: stderr does not name providers.sim.simulated:\n%s", tc.desc, r.stderr)
		}
	}
}

// TestInit: `sweeper init` writes a configuration that every command
// refuses, by key, until its placeholders are set (in the file or the
// environment), says which, and never overwrites a file.
func TestInit(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sweeper.toml")
	r := runCLI(t, nil, "init", "--output", file)
	if r.code != exitOK {
		t.Fatalf("init: code %d\n%s", r.code, r.stderr)
	}
	placeholders := []string{
		"database.url: still the placeholder CHANGE-ME; set your ledger's URL here or in SWEEPER_DATABASE_URL",
		"providers.orders_api.url: still the placeholder CHANGE-ME; set it here or in SWEEPER_PROVIDERS_ORDERS_API_URL",
		"review.default_owner: still the placeholder CHANGE-ME; set it here or in SWEEPER_REVIEW_DEFAULT_OWNER",
	}
	for _, want := range append(placeholders, "wrote "+file, "sweeper check-config --config "+file) {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("init's stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	// Every command refuses it as written, check-config and migrate alike.
	for _, args := range [][]string{{"check-config"}, {"migrate", "--status"}, {"sweep", "--once", "--dry-run"}} {
		r = runCLI(t, nil, append(args, "--config", file)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "3 problem(s):") {
			t.Errorf("%s: code %d, want %d with 3 problems\n%s", args[0], r.code, exitUsage, r.stderr)
		}
		for _, want := range placeholders {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", args[0], want, r.stderr)
			}
		}
	}

	// Chosen in the environment, the file is valid as it stands.
	chosen := withExampleChoices(map[string]string{"SWEEPER_REVIEW_DEFAULT_OWNER": "alice"})
	if r = runCLI(t, chosen, "check-config", "--config", file); r.code != exitOK {
		t.Fatalf("placeholders set in the environment: code %d\n%s", r.code, r.stderr)
	}
	// Chosen in the file too.
	edited := strings.NewReplacer("postgres://CHANGE-ME@localhost:5432/ledger", "postgres://sweeper@db.internal/ledger",
		`default_owner = "CHANGE-ME"`, `default_owner = "alice"`,
		"https://CHANGE-ME.invalid/", "https://orders.internal/").Replace(string(written))
	for _, line := range strings.Split(edited, "\n") {
		if !strings.HasPrefix(line, "#") && strings.Contains(line, config.Placeholder) {
			t.Fatalf("the replacements missed a placeholder: %s", line)
		}
	}
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if r = runCLI(t, nil, "check-config", "--config", file); r.code != exitOK {
		t.Fatalf("placeholders set in the file: code %d\n%s", r.code, r.stderr)
	}

	// A second init keeps the file as it is.
	r = runCLI(t, nil, "init", "--output", file)
	if r.code != exitUsage || !strings.Contains(r.stderr, file+" exists; init never overwrites") {
		t.Errorf("init over a file: code %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != edited {
		t.Errorf("init changed the existing file (%v):\n%s", err, b)
	}

	// --output - prints what it would write.
	r = runCLI(t, nil, "init", "--output", "-")
	if r.code != exitOK || r.stdout != string(written) {
		t.Errorf("init --output -: code %d, stdout differs from the written file:\n%s", r.code, r.stdout)
	}
	// init reads no configuration.
	if r = runCLI(t, nil, "init", "--config", file); r.code != exitUsage || !strings.Contains(r.stderr, "unknown flag: --config") {
		t.Errorf("init --config: code %d\n%s", r.code, r.stderr)
	}
}
