package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// urlSettings stands for the http kind's settings (this package cannot
// import the adapters): its url key.
type urlSettings struct {
	URL string `toml:"url"`
}

func (*urlSettings) Validate() []error { return nil }

// TestEveryDocumentedVariableIsKnown: each SWEEPER_ variable the README,
// docs/, deploy/, the Dockerfile, the Makefile and config.example.toml
// name is one the unknown-variable check lets through, given the blocks
// and *_env names the documents use (orders_api, sms-alerts, the
// receivers' secrets) — so that check never refuses what the documents
// tell a person to set.
func TestEveryDocumentedVariableIsKnown(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pattern := range []string{"../README.md", "../docs/*.md", "../deploy/*", "../deploy/kubernetes/*.yaml", "../Dockerfile", "../Makefile", "../config.example.toml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 6 {
		t.Fatalf("found only %v", files)
	}
	word := regexp.MustCompile(`SWEEPER_[A-Z0-9_]+`)
	var documented []string
	for _, f := range files {
		if info, err := os.Stat(f); err != nil || info.IsDir() || strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range word.FindAllString(string(b), -1) {
			// A prefix ("SWEEPER_PROVIDERS_<NAME>_<KEY>") is no variable.
			if !strings.HasSuffix(name, "_") && !slices.Contains(documented, name) {
				documented = append(documented, name)
			}
		}
	}
	if !slices.Contains(documented, EnvDatabaseURL) || !slices.Contains(documented, "SWEEPER_HTTP_LISTEN") {
		t.Fatalf("the documents' variables were not read: %v", documented)
	}
	var tree map[string]any
	if _, err := toml.Decode(`
[providers.orders_api]
kind = "http"
[providers.sms-alerts]
kind = "sim"
[pagerduty]
routing_key_env = "SWEEPER_PAGERDUTY_ROUTING_KEY"
[webhook]
secret_env = "SWEEPER_WEBHOOK_SECRET"
`, &tree); err != nil {
		t.Fatal(err)
	}
	environ := make([]string, len(documented))
	for i, name := range documented {
		environ[i] = name + "=x"
	}
	kinds := []Kind{{Name: "http", NewSettings: func() Settings { return &urlSettings{} }}}
	for _, p := range unknownEnv(environ, tree, kinds) {
		t.Errorf("documented, but refused: %v", p)
	}
}
