package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

const exampleConfig = "../../config.example.toml"

// exampleChoices are the values config.example.toml leaves to the operator
// (its placeholders), chosen in the environment as an operator may: a
// ledger database and the orders_api block's endpoint.
var exampleChoices = map[string]string{
	config.EnvDatabaseURL:              "postgres://sweeper@db.internal:5432/ledger",
	"SWEEPER_PROVIDERS_ORDERS_API_URL": "https://orders.internal/sweeper/lookup",
}

// withExampleChoices is environ with [exampleChoices] under it: a value
// environ sets wins.
func withExampleChoices(environ map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range exampleChoices {
		out[k] = v
	}
	for k, v := range environ {
		out[k] = v
	}
	return out
}

func TestExampleConfigLoads(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(exampleConfig, providerKinds(), func(k string) string { return exampleChoices[k] })
	if err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	if len(cfg.Providers) == 0 || len(cfg.Review.Escalation) == 0 {
		t.Errorf("example config shows no providers or no escalation levels")
	}
	// Turning Slack and a token on, as its comments say, keeps it valid.
	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), `channel = ""`, `channel = "C0OPSREVIEW"`, 1)
	text = strings.Replace(text, `token_env = ""`, `token_env = "ORDERS_LOOKUP_TOKEN"`, 1)
	environ := withExampleChoices(map[string]string{config.EnvSlackToken: "xoxb-test", config.EnvSlackSigning: "signing-test", "ORDERS_LOOKUP_TOKEN": "t"})
	if _, err := config.Parse(text, providerKinds(), func(k string) string { return environ[k] }); err != nil {
		t.Errorf("example with Slack on: %v", err)
	}
}

// TestExampleConfigOptionalBlocks enables the example's "#! " blocks —
// the adapters that need credentials — and validates the result.
func TestExampleConfigOptionalBlocks(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\n#! ", "\n")
	environ := withExampleChoices(map[string]string{
		"STRIPE_RESTRICTED_KEY": "rk_test_x", "TWILIO_ACCOUNT_SID": "AC123", "TWILIO_AUTH_TOKEN": "t",
		"MAILER_DB_DSN": "postgres://127.0.0.1/mailer", "POSTMARK_SERVER_TOKEN": "pm", "MAILGUN_API_KEY": "key-x", "SENDGRID_API_KEY": "SG.x",
		"HUBSPOT_ACCESS_TOKEN":     "pat-na1-x",
		"GCAL_SERVICE_ACCOUNT_KEY": `{"type":"service_account"}`,
		"XERO_ACCESS_TOKEN":        "xero-at-x", "XERO_REFRESH_TOKEN": "r", "XERO_CLIENT_ID": "i", "XERO_CLIENT_SECRET": "s",
		"QBO_ACCESS_TOKEN": "qbo-x", "QBO_REFRESH_TOKEN": "r", "QBO_CLIENT_ID": "i", "QBO_CLIENT_SECRET": "s",
	})
	cfg, err := config.Parse(text, providerKinds(), func(k string) string { return environ[k] })
	if err != nil {
		t.Fatalf("example with every block enabled: %v", err)
	}
	for _, name := range []string{"stripe", "stripe_invoices", "twilio", "postmark", "mailgun", "sendgrid", "hubspot", "mailer_db", "orders_api", "sim"} {
		if cfg.Providers[name] == nil || cfg.Providers[name].Settings == nil {
			t.Errorf("providers.%s not enabled by uncommenting", name)
		}
	}
	if cfg.Providers["google_calendar"] == nil || cfg.Providers["google_calendar"].Settings == nil {
		t.Error("providers.google_calendar not enabled by uncommenting")
	}
	if cfg.Providers["xero"] == nil || cfg.Providers["xero"].Settings == nil {
		t.Error("providers.xero not enabled by uncommenting")
	}
	if cfg.Providers["quickbooks"] == nil || cfg.Providers["quickbooks"].Settings == nil {
		t.Error("providers.quickbooks not enabled by uncommenting")
	}
}

// TestExampleConfigDocumentsEveryKey: every key the configuration accepts
// appears in config.example.toml, set or in a comment.
func TestExampleConfigDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	keys := tomlKeys(reflect.TypeFor[config.Config](), "")
	keys = append(keys, tomlKeys(reflect.TypeFor[config.Provider](), "providers.NAME.")...)
	for _, kind := range providerKinds() {
		keys = append(keys, tomlKeys(reflect.TypeOf(kind.NewSettings()).Elem(), "providers.NAME.")...)
	}
	if len(keys) < 25 {
		t.Fatalf("found only %d keys: %v", len(keys), keys)
	}
	for _, key := range keys {
		leaf := key[strings.LastIndex(key, ".")+1:]
		asKey := regexp.MustCompile(`(?m)^[#!\s]*` + regexp.QuoteMeta(leaf) + `\s*=`)
		asTable := regexp.MustCompile(`(?m)^[#\s]*\[` + regexp.QuoteMeta(strings.TrimPrefix(key, "providers.NAME.")) + `\]`)
		if !asKey.MatchString(text) && !asTable.MatchString(text) {
			t.Errorf("config.example.toml does not document %s", key)
		}
	}
	// And it decodes as TOML with every section where the comments say.
	var raw map[string]any
	if _, err := toml.Decode(text, &raw); err != nil {
		t.Fatal(err)
	}
}

// TestConfigPageDocumentsEveryKey: docs/configuration.md's table names
// every key the configuration accepts, and nothing else. A cell lists keys
// in backquotes; one starting with "." shares the first key's prefix
// (`providers.NAME.url`, `.token_env`); a table or map is documented by its
// own name (`review.escalation`, `review.owners.workflows.W`).
func TestConfigPageDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	if !strings.HasPrefix(section, "# Configuration\n") {
		t.Fatal("docs/configuration.md does not start with # Configuration")
	}
	quoted := regexp.MustCompile("`([^`]+)`")
	var documented []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.Split(line, "|")[1]
		var prefix string
		for i, m := range quoted.FindAllStringSubmatch(cell, -1) {
			key := m[1]
			if i == 0 {
				prefix = key[:strings.LastIndex(key, ".")]
			} else if strings.HasPrefix(key, ".") {
				key = prefix + key
			}
			documented = append(documented, key)
		}
	}
	keys := tomlKeys(reflect.TypeFor[config.Config](), "")
	keys = append(keys, tomlKeys(reflect.TypeFor[config.Provider](), "providers.NAME.")...)
	for _, kind := range providerKinds() {
		keys = append(keys, tomlKeys(reflect.TypeOf(kind.NewSettings()).Elem(), "providers.NAME.")...)
	}
	related := func(a, b string) bool {
		return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
	}
	for _, key := range keys {
		if !slices.ContainsFunc(documented, func(d string) bool { return related(key, d) }) {
			t.Errorf("docs/configuration.md's table does not document %s", key)
		}
	}
	for _, d := range documented {
		if !slices.ContainsFunc(keys, func(key string) bool { return related(key, d) }) {
			t.Errorf("docs/configuration.md's table documents %s, which is not a key", d)
		}
	}
}

// tomlKeys lists the leaf keys of a config struct by their toml tags.
func tomlKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[config.Duration]() {
			keys = append(keys, tomlKeys(ft, prefix+name+".")...)
			continue
		}
		keys = append(keys, prefix+name)
	}
	return keys
}

func TestUsageAndExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{desc: "no command", args: nil, wantCode: exitUsage, wantErr: "Usage:\n  sweeper [command]"},
		{desc: "help", args: []string{"--help"}, wantCode: exitOK, wantOut: "check-config"},
		{desc: "unknown command", args: []string{"resend"}, wantCode: exitUsage, wantErr: `unknown command "resend"`},
		{desc: "migrate --help", args: []string{"migrate", "--help"}, wantCode: exitOK, wantOut: "-status"},
		{desc: "check-config -h", args: []string{"check-config", "-h"}, wantCode: exitOK, wantOut: "-config"},
		{desc: "version --help", args: []string{"version", "--help"}, wantCode: exitOK, wantOut: "Usage:\n  sweeper version"},
		{desc: "unknown flag", args: []string{"migrate", "--force"}, wantCode: exitUsage, wantErr: "unknown flag: --force"},
		{desc: "stray argument", args: []string{"check-config", "extra"}, wantCode: exitUsage, wantErr: `unexpected argument "extra"`},
		{desc: "version", args: []string{"version"}, wantCode: exitOK, wantOut: "sweeper "},
		{desc: "healthcheck of an undocumented path", args: []string{"healthcheck", "--path", "/debug/pprof"}, wantCode: exitUsage,
			wantErr: `--path must be /healthz or /readyz, not "/debug/pprof"`},
		{desc: "no config file", args: []string{"check-config"}, wantCode: exitUsage, wantErr: "no configuration: ./sweeper.toml does not exist"},
		{desc: "missing config file", args: []string{"check-config", "--config", "nope.toml"}, wantCode: exitUsage, wantErr: "nope.toml: no such file or directory"},
		{desc: "broken config", args: []string{"check-config", "--config", "../../config/testdata/bad/many_problems.toml"}, wantCode: exitUsage,
			wantErr: "5 problem(s):\n  providers.sim.colour: unknown key\n  sweep.batch_size: must be between 1 and 10000\n"},
		{desc: "migrate with broken config", args: []string{"migrate", "--config", "../../config/testdata/bad/unknown_kind.toml"}, wantCode: exitUsage,
			wantErr: `providers.mail.kind: unknown kind "smtp": one of sim, http, stripe, twilio, postmark, mailgun, sendgrid, postgres, hubspot`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, tc.args...)
			if r.code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.wantCode, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, r.stdout)
			}
			if !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, r.stderr)
			}
		})
	}
}

func TestConfigPathFromEnvironment(t *testing.T) {
	t.Parallel()
	r := runCLI(t, withExampleChoices(map[string]string{config.EnvConfig: exampleConfig}), "check-config")
	if r.code != exitOK || !strings.Contains(r.stdout, "config.example.toml is valid") {
		t.Fatalf("code %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	// --config wins over the environment.
	r = runCLI(t, withExampleChoices(map[string]string{config.EnvConfig: "nope.toml"}), "check-config", "--config", exampleConfig)
	if r.code != exitOK {
		t.Fatalf("--config did not win: %s", r.stderr)
	}
}

func TestCheckConfigMasksSecrets(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), `channel = ""`, `channel = "C0OPSREVIEW"`, 1)
	text = strings.Replace(text, `token_env = ""`, `token_env = "ORDERS_LOOKUP_TOKEN"`, 1)
	file := filepath.Join(t.TempDir(), "sweeper.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := withExampleChoices(map[string]string{
		config.EnvDatabaseURL:  "postgres://sweeper:Pa55-db-secret@db.internal/ledger",
		config.EnvSlackToken:   "xoxb-Pa55-slack-secret",
		config.EnvSlackSigning: "Pa55-signing-secret",
		"ORDERS_LOOKUP_TOKEN":  "Pa55-orders-secret",
	})
	r := runCLI(t, environ, "check-config", "--config", file)
	if r.code != exitOK {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "Pa55") {
		t.Errorf("a secret was printed:\n%s%s", r.stdout, r.stderr)
	}
	for _, want := range []string{`url = "postgres://sweeper@db.internal/ledger"`, "printed without its password", "# SLACK_BOT_TOKEN = set", "# ORDERS_LOOKUP_TOKEN = set (providers.orders_api.token_env)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	// Unset, the same file lists every missing secret and exits 2.
	r = runCLI(t, withExampleChoices(map[string]string{config.EnvDatabaseURL: environ[config.EnvDatabaseURL]}), "check-config", "--config", file)
	if r.code != exitUsage {
		t.Fatalf("code %d, want %d", r.code, exitUsage)
	}
	for _, want := range []string{
		"providers.orders_api.token_env: environment variable ORDERS_LOOKUP_TOKEN is not set",
		"slack.channel: environment variable SLACK_BOT_TOKEN is not set",
		"slack.channel: environment variable SLACK_SIGNING_SECRET is not set",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestMigrateProcesses runs the real binary: two replicas migrating one empty
// database at once both succeed, a third run changes nothing, and --status
// lists every version as applied.
func TestMigrateProcesses(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := dbtest.NewEmptyDatabase(t)
	environ := append(os.Environ(), config.EnvDatabaseURL+"="+dbURL, config.EnvConfig+"="+exampleConfig,
		"SWEEPER_PROVIDERS_ORDERS_API_URL="+exampleChoices["SWEEPER_PROVIDERS_ORDERS_API_URL"])
	sweeper := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = environ
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	stderrs := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			outs[i], stderrs[i], errs[i] = sweeper("migrate")
			if errs[i] != nil {
				errs[i] = &buildError{errs[i], []byte(stderrs[i])}
			}
		})
	}
	wg.Wait()
	// What was applied is said once, on stdout; River's migrator does not
	// echo it as log lines.
	for i, stderr := range stderrs {
		if strings.TrimSpace(stderr) != "" {
			t.Errorf("replica %d wrote to stderr:\n%s", i, stderr)
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	// The advisory lock makes one replica apply everything while the other
	// waits, then finds nothing to do.
	current := strings.Count(outs[0]+outs[1], "database is current")
	appliedRuns := strings.Count(outs[0]+outs[1], "migration(s) applied")
	if current != 1 || appliedRuns != 1 {
		t.Errorf("want one replica to apply and one to find the database current:\n%s\n%s", outs[0], outs[1])
	}

	stdout, stderr, err := sweeper("migrate")
	if err != nil || !strings.Contains(stdout, "database is current: nothing to apply") {
		t.Fatalf("third run: %v\n%s%s", err, stdout, stderr)
	}

	stdout, stderr, err = sweeper("migrate", "--status", "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, stderr)
	}
	var versions []migrations.Version
	if err := json.Unmarshal([]byte(stdout), &versions); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, stdout)
	}
	for _, v := range versions {
		if !v.Applied {
			t.Errorf("%s %d pending after migrate", v.Component, v.Version)
		}
	}
	stdout, stderr, err = sweeper("migrate", "--status")
	if err != nil || !strings.Contains(stderr, "0 pending") || !strings.Contains(stdout, "20261129000001_ledger.sql") {
		t.Errorf("status table: %v\n%s%s", err, stdout, stderr)
	}
}

// TestMigrateStatusOnFreshDatabase: on a database never migrated every
// migration is pending, and the exit code (3) says so to a release script.
func TestMigrateStatusOnFreshDatabase(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewEmptyDatabase(t)
	r := runCLI(t, withExampleChoices(map[string]string{config.EnvDatabaseURL: dbURL, config.EnvConfig: exampleConfig}), "migrate", "--status")
	if r.code != exitPending || !strings.Contains(r.stderr, "0 applied") || strings.Contains(r.stdout, " applied  ") {
		t.Fatalf("code %d, want %d\n%s%s", r.code, exitPending, r.stdout, r.stderr)
	}
}

// TestMigrateStatusExitCodesAndDown: migrate --status exits 0 on a current
// database, 3 with migrations pending (after migrate --down 2) and 4 on a
// database ahead of the binary, which it says; --down refuses that
// database, and so do migrate and run.
func TestMigrateStatusExitCodesAndDown(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	environ := map[string]string{config.EnvDatabaseURL: dbURL}
	cfgFile := writeConfig(t, daemonConfig)
	cli := func(args ...string) result { return runCLI(t, environ, append(args, "--config", cfgFile)...) }

	if r := cli("migrate", "--status"); r.code != exitOK || !strings.HasSuffix(r.stderr, " applied, 0 pending\n") {
		t.Fatalf("status of a current database: code %d\n%s", r.code, r.stderr)
	}
	r := cli("migrate", "--down", "2")
	if r.code != exitOK || strings.Count(r.stdout, "rolled back sweeper ") != 2 || !strings.Contains(r.stdout, "2 migration(s) rolled back") {
		t.Fatalf("migrate --down 2: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli("migrate", "--status"); r.code != exitPending || !strings.HasSuffix(r.stderr, " applied, 2 pending\n") {
		t.Errorf("status after --down 2: code %d, want %d\n%s", r.code, exitPending, r.stderr)
	}
	if r := cli("migrate", "--status", "--json"); r.code != exitPending || !strings.HasPrefix(r.stdout, "[") {
		t.Errorf("status --json after --down 2: code %d, want %d with the list\n%s", r.code, exitPending, r.stdout)
	}
	if r := cli("migrate"); r.code != exitOK || !strings.Contains(r.stdout, "2 migration(s) applied") {
		t.Fatalf("migrate after --down 2: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"migrate", "--down", "0"}, {"migrate", "--down", "1", "--status"}} {
		if r := cli(args...); r.code != exitUsage {
			t.Errorf("%v: code %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}

	// A newer sweeper's migration.
	if _, err := dbtest.Pool(t, dbURL).Exec(t.Context(), `INSERT INTO sweeper.schema_migrations (version_id, is_applied) VALUES (20991231000001, true)`); err != nil {
		t.Fatal(err)
	}
	r = cli("migrate", "--status")
	if r.code != exitAhead || !strings.Contains(r.stderr, "the database is ahead of this binary: 1 migration(s)") ||
		!strings.Contains(r.stdout, "20991231000001  (not in this binary)") {
		t.Errorf("status of a database ahead: code %d, want %d\n%s%s", r.code, exitAhead, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"migrate"}, {"migrate", "--down", "1"}, {"run"}} {
		if r := cli(args...); r.code != exitFailure || !strings.Contains(r.stderr, "the database is ahead of this binary") {
			t.Errorf("%v on a database ahead: code %d, want %d and the refusal\n%s", args, r.code, exitFailure, r.stderr)
		}
	}
	if r := cli("run"); !strings.Contains(r.stderr, "--allow-newer-schema") {
		t.Errorf("run's refusal does not name --allow-newer-schema:\n%s", r.stderr)
	}
}

func TestMigrateUnreachableDatabase(t *testing.T) {
	t.Parallel()
	environ := withExampleChoices(map[string]string{
		// Port 1 on loopback: nothing listens there.
		config.EnvDatabaseURL: "postgres://sweeper:Pa55-db-secret@127.0.0.1:1/ledger?connect_timeout=2",
		config.EnvConfig:      exampleConfig,
	})
	r := runCLI(t, environ, "migrate")
	if r.code != exitFailure {
		t.Fatalf("code %d, want %d\n%s", r.code, exitFailure, r.stderr)
	}
	if !strings.Contains(r.stderr, "sweeper:xxxxx@127.0.0.1:1") || !strings.Contains(r.stderr, "is not reachable") {
		t.Errorf("stderr does not name the masked URL:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "Pa55") {
		t.Errorf("stderr carries the password:\n%s", r.stderr)
	}
}

// TestDatabaseURLPasswordNeverPrinted: whether the database cannot be
// reached or its URL does not parse, no command prints any of the password,
// wherever it sits in the URL and wherever the URL comes from.
func TestDatabaseURLPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "database-url")
	if err := os.WriteFile(file, []byte("postgres://app:8641/Pa55-Qz8v@127.0.0.1:1/ledger\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		desc    string
		environ map[string]string
		args    []string
		code    int
	}{
		{"unreachable: password in the user info and a parameter",
			map[string]string{config.EnvDatabaseURL: "postgres://sweeper:Pa55-user@127.0.0.1:1/ledger?sslpassword=Pa55-param&connect_timeout=2"},
			[]string{"migrate"}, exitFailure},
		{"slash in the password", map[string]string{config.EnvDatabaseURL: "postgres://app:Pa55/Qz8v@127.0.0.1:1/ledger"},
			[]string{"migrate"}, exitUsage},
		{"at sign in the password", map[string]string{config.EnvDatabaseURL: "postgres://app:Pa55@Qz8v@127.0.0.1:1/ledger"},
			[]string{"migrate"}, exitUsage},
		{"hash in the password, check-config", map[string]string{config.EnvDatabaseURL: "postgres://app:8641#Pa55-Qz8v@db.internal/ledger"},
			[]string{"check-config"}, exitUsage},
		{"question mark in the password, check-config", map[string]string{config.EnvDatabaseURL: "postgres://app:Pa55?Qz8v@db.internal/ledger"},
			[]string{"check-config"}, exitUsage},
		{"slash after digits, from a file", map[string]string{config.EnvDatabaseURL + "_FILE": file},
			[]string{"migrate"}, exitUsage},
		// demo and bench take the server from the variable, not the config.
		{"hash after digits, demo", map[string]string{config.EnvDatabaseURL: "postgres://app:8641#Pa55-Qz8v@127.0.0.1:1/ledger"},
			[]string{"demo"}, exitUsage},
		{"slash after digits, bench", map[string]string{config.EnvDatabaseURL: "postgres://app:8641/Pa55-Qz8v@127.0.0.1:1/ledger"},
			[]string{"bench"}, exitFailure},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			c.environ[config.EnvConfig] = exampleConfig
			c.environ["SWEEPER_PROVIDERS_ORDERS_API_URL"] = exampleChoices["SWEEPER_PROVIDERS_ORDERS_API_URL"]
			r := runCLI(t, c.environ, c.args...)
			if r.code != c.code {
				t.Fatalf("code %d, want %d\n%s%s", r.code, c.code, r.stdout, r.stderr)
			}
			if out := r.stdout + r.stderr; strings.Contains(out, "Pa55") || strings.Contains(out, "Qz8v") || strings.Contains(out, "8641") {
				t.Errorf("the password was printed:\n%s%s", r.stdout, r.stderr)
			}
			if c.code == exitUsage && !strings.Contains(r.stderr, "SWEEPER_DATABASE_URL") {
				t.Errorf("stderr does not name the variable:\n%s", r.stderr)
			}
		})
	}
}

// TestStaticBuild is the Dockerfile's build step: a static, cgo-free binary
// that runs.
func TestStaticBuild(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(context.Background(), binary(t), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "sweeper ") {
		t.Fatalf("static binary: %v\n%s", err, out)
	}
}

// TestCheckConfigShowsNextFireTimes: check-config prints each schedule's
// next three fire times in the schedule's own time zone, so a person sees
// what the expression means.
func TestCheckConfigShowsNextFireTimes(t *testing.T) {
	t.Parallel()
	file := writeConfig(t, strings.Replace(daemonConfig, `sweep = "@every 1s"`,
		`sweep = "CRON_TZ=America/New_York 30 19 * * *"
escalate = "CRON_TZ=Asia/Tokyo 0 9 * * 1"`, 1))
	r := runCLI(t, map[string]string{config.EnvDatabaseURL: "postgres://db.internal/ledger"}, "check-config", "--config", file)
	if r.code != exitOK {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		desc, key string
		line      *regexp.Regexp
	}{
		{desc: "daily in New York", key: "schedules.sweep",
			line: regexp.MustCompile(`(?m)^#   schedules\.sweep +"CRON_TZ=America/New_York 30 19 \* \* \*": (\w{3} \d{4}-\d\d-\d\d 19:30:00 E[SD]T \(-0[45]:00\)(, |$)){3}`)},
		{desc: "weekly in Tokyo", key: "schedules.escalate",
			line: regexp.MustCompile(`(?m)^#   schedules\.escalate +"CRON_TZ=Asia/Tokyo 0 9 \* \* 1": (Mon \d{4}-\d\d-\d\d 09:00:00 JST \(\+09:00\)(, |$)){3}`)},
		{desc: "every 5s", key: "schedules.notify",
			line: regexp.MustCompile(`(?m)^#   schedules\.notify +"@every 5s": (\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \([+-]\d\d:\d\d\)(, |$)){3}`)},
	} {
		if !tc.line.MatchString(r.stdout) {
			t.Errorf("%s: no line for %s matching %s in:\n%s", tc.desc, tc.key, tc.line, r.stdout)
		}
	}
}
