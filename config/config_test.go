package config_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sweeper/sweeper/config"
	allkinds "github.com/sweeper/sweeper/providers/kinds"
	"github.com/sweeper/sweeper/providers/sim"
)

var update = flag.Bool("update", false, "rewrite the .err golden files under testdata/bad")

var kinds = allkinds.All()

func env(vars map[string]string) config.Getenv {
	return func(k string) string { return vars[k] }
}

// TestBadConfigs loads one broken config per rule and checks the exact
// message, kept beside it in a .err file (rewrite with -update, then read
// the diff). A .env file beside it, when present, is the environment: one
// VAR=value a line (paths relative to this package); otherwise it is empty.
func TestBadConfigs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.toml")
	if err != nil || len(files) < 30 {
		t.Fatalf("found %d bad configs (%v)", len(files), err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(file, kinds, env(readEnvFile(t, strings.TrimSuffix(file, ".toml")+".env")))
			if err == nil {
				t.Fatal("loaded without error")
			}
			golden := strings.TrimSuffix(file, ".toml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(err.Error()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, readErr := os.ReadFile(golden)
			if readErr != nil {
				t.Fatalf("%v (run go test ./config -update)", readErr)
			}
			if diff := cmp.Diff(strings.TrimSuffix(string(want), "\n"), err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// readEnvFile reads VAR=value lines; a missing file is no variables.
func readEnvFile(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for line := range strings.Lines(string(b)) {
		name, value, ok := strings.Cut(strings.TrimRight(line, "\n"), "=")
		if !ok {
			t.Fatalf("%s: %q is not VAR=value", file, line)
		}
		vars[name] = value
	}
	return vars
}

const minimal = `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"
`

func TestDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse(minimal+"\n[providers.sim]\nkind = \"sim\"\nsimulated = true\n", kinds, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["sim"]
	for _, c := range []struct {
		desc      string
		got, want any
	}{
		{"schedules.sweep", cfg.Schedules.Sweep, "*/5 * * * *"},
		{"schedules.escalate", cfg.Schedules.Escalate, "* * * * *"},
		{"sweep.batch_size", cfg.Sweep.BatchSize, 500},
		{"sweep.query_timeout", cfg.Sweep.QueryTimeout.Duration, 30 * time.Second},
		{"river.max_workers", cfg.River.MaxWorkers, 100},
		{"river.shutdown_grace", cfg.River.ShutdownGrace.Duration, 30 * time.Second},
		{"schedules.prune", cfg.Schedules.Prune, "@every 1h"},
		{"retention.outbox", cfg.Retention.Outbox.Duration, 720 * time.Hour},
		{"retention.jobs", cfg.Retention.Jobs.Duration, 24 * time.Hour},
		{"retention.resolved_tickets", cfg.Retention.ResolvedTickets.Duration, time.Duration(0)},
		{"http.river_ui", cfg.HTTP.RiverUI, false},
		{"database.max_conns", cfg.Database.MaxConns, int32(20)},
		{"stale_after", p.StaleAfter.Duration, 15 * time.Minute},
		{"lookup_timeout", p.LookupTimeout.Duration, 10 * time.Second},
		{"lookup_budget", p.LookupBudget.Duration, 10 * time.Minute},
		{"rate_limit", p.RateLimit, 10.0},
		{"concurrency", p.Concurrency, 4},
		{"review.window", cfg.Review.Window.Duration, 24 * time.Hour},
		{"review.priority", cfg.Review.Priority, "normal"},
		{"review.max_repeats", cfg.Review.MaxRepeats, 3},
		{"http.listen", cfg.HTTP.Listen, "127.0.0.1:8080"},
		{"slack.channel", cfg.Slack.Channel, ""},
		{"slack.max_alert_age", cfg.Slack.MaxAlertAge.Duration, 24 * time.Hour},
		{"slack.group_wait", cfg.Slack.GroupWait.Duration, 30 * time.Second},
		{"slack.group_threshold", cfg.Slack.Threshold(), 3},
		{"slack.group_detail_limit", cfg.Slack.DetailLimit(), 10},
		{"slack.group_interval", cfg.Slack.GroupInterval.Duration, time.Minute},
		{"slack.incident_refresh", cfg.Slack.IncidentRefresh.Duration, 30 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.desc, c.got, c.want)
		}
	}
	if _, ok := p.Settings.(*sim.Config); !ok {
		t.Errorf("settings are %T, want *sim.Config", p.Settings)
	}
}

func TestEnvironmentOverridesDatabaseURL(t *testing.T) {
	t.Parallel()
	const fromEnv = "postgres://sweeper:s3cret@db.internal:5432/ledger"
	cfg, err := config.Parse(minimal, kinds, env(map[string]string{config.EnvDatabaseURL: fromEnv}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database.URL != fromEnv {
		t.Errorf("database.url = %q, want the environment's", cfg.Database.URL)
	}
}

func TestDatabaseURLFromFile(t *testing.T) {
	t.Parallel()
	const fromFile = "postgres://sweeper:s3cret@db.internal:5432/ledger"
	file := filepath.Join(t.TempDir(), "database-url")
	if err := os.WriteFile(file, []byte(fromFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(minimal, kinds, env(map[string]string{config.EnvDatabaseURL + "_FILE": file}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database.URL != fromFile {
		t.Errorf("database.url = %q, want the file's", cfg.Database.URL)
	}
	_, err = config.Parse(minimal, kinds, env(map[string]string{config.EnvDatabaseURL + "_FILE": file + ".missing"}))
	if err == nil || !strings.Contains(err.Error(), "database.url: SWEEPER_DATABASE_URL_FILE") {
		t.Errorf("a missing URL file: err = %v, want a database.url problem naming the variable", err)
	}
}

func TestSecretFromFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("tok-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := env(map[string]string{"ORDERS_TOKEN_FILE": file})
	got, err := config.Secret(getenv, "ORDERS_TOKEN")
	if err != nil || got != "tok-from-file" {
		t.Fatalf("Secret = %q, %v", got, err)
	}
	_, err = config.Secret(env(map[string]string{"ORDERS_TOKEN_FILE": file + ".missing"}), "ORDERS_TOKEN")
	if err == nil || strings.Contains(err.Error(), "tok-from-file") {
		t.Errorf("missing file: %v", err)
	}
	text := minimal + "\n[providers.orders]\nkind = \"http\"\nurl = \"https://orders.example.com/lookup\"\ntoken_env = \"ORDERS_TOKEN\"\n"
	if _, err := config.Parse(text, kinds, getenv); err != nil {
		t.Errorf("token in a _FILE not accepted: %v", err)
	}
}

// TestWriteTOMLHidesSecretsAndRoundTrips: the effective config printed by
// check-config carries no secret and parses back to the same config.
func TestWriteTOMLHidesSecretsAndRoundTrips(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{
		config.EnvDatabaseURL:  "postgres://sweeper:db-pa55word@db.internal:5432/ledger?password=other-pa55&sslpassword=ssl-pa55",
		config.EnvSlackToken:   "xoxb-slack-t0ken",
		config.EnvSlackSigning: "signing-s3cret",
		"ORDERS_TOKEN":         "orders-t0ken",
	})
	text := minimal + `
[slack]
channel = "C0OPSREVIEW"
reviewers = ["U0LEAD01", "W0LEAD02"]
team_id = "T0ACME01"
app_id = "A0SWEEPER1"

[providers.orders]
kind = "http"
url = "https://orders.example.com/lookup"
token_env = "ORDERS_TOKEN"

[providers.sim]
kind = "sim"
simulated = true
latency = "5ms"
[[providers.sim.rules]]
match = "found-*"
outcome = "found"
`
	cfg, err := config.Parse(text, kinds, getenv)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := cfg.WriteTOML(&out, getenv); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"db-pa55word", "other-pa55", "ssl-pa55", "xoxb-slack-t0ken", "signing-s3cret", "orders-t0ken"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("output contains secret %q:\n%s", secret, out.String())
		}
	}
	for _, want := range []string{"# SLACK_BOT_TOKEN = set", "# ORDERS_TOKEN = set (providers.orders.token_env)", `url = "postgres://sweeper@db.internal:5432/ledger"`,
		"# database.url is printed without its password (SWEEPER_DATABASE_URL has it)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The printed file parses back (with the real URL from the environment):
	// a masked password would be a password in the file.
	again, err := config.Parse(out.String(), kinds, getenv)
	if err != nil {
		t.Fatalf("printed config does not parse: %v\n%s", err, out.String())
	}
	opts := cmp.Options{cmp.Comparer(func(a, b config.Duration) bool { return a.Duration == b.Duration }),
		// where each value came from differs, by design; the ledger table
		// is made from the ledger keys, compared
		cmpopts.IgnoreUnexported(config.Config{}, config.Ledger{})}
	if diff := cmp.Diff(cfg, again, opts); diff != "" {
		t.Errorf("round trip (-first +second):\n%s", diff)
	}
	if cfg.LedgerTable().String() != again.LedgerTable().String() {
		t.Errorf("ledger table %s, read back as %s", cfg.LedgerTable(), again.LedgerTable())
	}
}

// TestRiverUICredentials: http.river_ui takes its credentials from the
// environment or from _FILE variants, and check-config shows whether they
// are set, never their values.
func TestRiverUICredentials(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte("ui-pa55word\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := env(map[string]string{config.EnvRiverUIUser: "ops", config.EnvRiverUIPass + "_FILE": file})
	cfg, err := config.Parse(minimal+"\n[http]\nriver_ui = true\n", kinds, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.HTTP.RiverUI {
		t.Fatal("http.river_ui not on")
	}
	var out bytes.Buffer
	if err := cfg.WriteTOML(&out, getenv); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"river_ui = true", "# SWEEPER_RIVERUI_USER = set", "# SWEEPER_RIVERUI_PASSWORD = set"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "ui-pa55word") {
		t.Errorf("output contains the password:\n%s", out.String())
	}
	// A password file that cannot be read is a problem of the key.
	_, err = config.Parse(minimal+"\n[http]\nriver_ui = true\n", kinds,
		env(map[string]string{config.EnvRiverUIUser: "ops", config.EnvRiverUIPass + "_FILE": file + ".missing"}))
	if err == nil || !strings.Contains(err.Error(), "http.river_ui: environment variable SWEEPER_RIVERUI_PASSWORD is not set") {
		t.Errorf("unreadable password file: %v", err)
	}
}

// TestSchedulesThatCanNeverWork: a cron expression is refused, under its
// key, when it never fires or asks for more than one run a second (which
// cron would silently round to one a second); a time zone prefix with no
// schedule after it is an error, not a panic.
func TestSchedulesThatCanNeverWork(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc, key, expr string
		want            string // "" when valid
	}{
		{"five fields", "sweep", "*/5 * * * *", ""},
		{"every second", "notify", "@every 1s", ""},
		{"time zone and descriptor", "sweep", "CRON_TZ=Europe/Paris @every 30s", ""},
		{"February 29 fires in leap years", "escalate", "0 0 29 2 *", ""},
		{"February 30", "sweep", "0 0 30 2 *", `schedules.sweep: "0 0 30 2 *" never fires (no time in the next five years matches it)`},
		{"April 31 in a time zone", "escalate", "CRON_TZ=UTC 0 0 31 4 *", `schedules.escalate: "CRON_TZ=UTC 0 0 31 4 *" never fires (no time in the next five years matches it)`},
		{"zero interval", "notify", "@every 0s", `schedules.notify: "@every 0s" fires more often than once a second (cron would run it every second)`},
		{"one nanosecond", "notify", "@every 1ns", `schedules.notify: "@every 1ns" fires more often than once a second (cron would run it every second)`},
		{"half a second", "sweep", "@every 500ms", `schedules.sweep: "@every 500ms" fires more often than once a second (cron would run it every second)`},
		{"negative interval", "sweep", "@every -5s", `schedules.sweep: "@every -5s" fires more often than once a second (cron would run it every second)`},
		{"sub-second in a time zone", "sweep", "CRON_TZ=UTC @every 10ms", `schedules.sweep: "CRON_TZ=UTC @every 10ms" fires more often than once a second (cron would run it every second)`},
		{"time zone alone", "sweep", "CRON_TZ=UTC", `schedules.sweep: invalid cron expression "CRON_TZ=UTC": a time zone and no schedule after it`},
		{"TZ alone", "escalate", "TZ=", `schedules.escalate: invalid cron expression "TZ=": a time zone and no schedule after it`},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			text := minimal + "\n[schedules]\n" + c.key + " = " + strconv.Quote(c.expr) + "\n"
			_, err := config.Parse(text, kinds, env(nil))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Errorf("err = %v, want %s", err, c.want)
			}
		})
	}
}

// TestSecretSetTwice: a secret in both NAME and NAME_FILE is an error
// naming both, never a silent choice of one, and it carries neither value.
func TestSecretSetTwice(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Secret(env(map[string]string{"ORDERS_TOKEN": "from-the-variable", "ORDERS_TOKEN_FILE": file}), "ORDERS_TOKEN")
	if err == nil || err.Error() != "both ORDERS_TOKEN and ORDERS_TOKEN_FILE are set; set only one" {
		t.Errorf("Secret: err = %v", err)
	}
	if config.SecretSet(env(map[string]string{"ORDERS_TOKEN": "from-the-variable", "ORDERS_TOKEN_FILE": file}), "ORDERS_TOKEN") {
		t.Error("SecretSet reports a secret set twice as usable")
	}

	slack := minimal + "\n[slack]\nchannel = \"C0OPSREVIEW\"\n"
	for _, c := range []struct {
		desc, text, name string
		others           map[string]string // the other secrets the text needs
		want             string
	}{
		{"database URL", minimal, config.EnvDatabaseURL, nil,
			"database.url: both SWEEPER_DATABASE_URL and SWEEPER_DATABASE_URL_FILE are set; set only one"},
		{"Slack token", slack, config.EnvSlackToken, map[string]string{config.EnvSlackSigning: "s"},
			"slack.channel: both SLACK_BOT_TOKEN and SLACK_BOT_TOKEN_FILE are set; set only one"},
		{"Slack signing secret", slack, config.EnvSlackSigning, map[string]string{config.EnvSlackToken: "t"},
			"slack.channel: both SLACK_SIGNING_SECRET and SLACK_SIGNING_SECRET_FILE are set; set only one"},
		{"River UI password", minimal + "\n[http]\nriver_ui = true\n", config.EnvRiverUIPass, map[string]string{config.EnvRiverUIUser: "ops"},
			"http.river_ui: both SWEEPER_RIVERUI_PASSWORD and SWEEPER_RIVERUI_PASSWORD_FILE are set; set only one"},
		{"required provider credential", minimal + "\n[providers.pay]\nkind = \"stripe\"\nsecret_key_env = \"PAY_KEY\"\n", "PAY_KEY", nil,
			"providers.pay.secret_key_env: both PAY_KEY and PAY_KEY_FILE are set; set only one"},
		{"optional provider credential", minimal + "\n[providers.orders]\nkind = \"http\"\nurl = \"https://orders.example.com/lookup\"\ntoken_env = \"ORDERS_TOKEN\"\n", "ORDERS_TOKEN", nil,
			"providers.orders.token_env: both ORDERS_TOKEN and ORDERS_TOKEN_FILE are set; set only one"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{c.name: "postgres://from-the-variable@db/x", c.name + "_FILE": file}
			for k, v := range c.others {
				vars[k] = v
			}
			_, err := config.Parse(c.text, kinds, env(vars))
			if err == nil || err.Error() != c.want {
				t.Errorf("err = %v, want %s", err, c.want)
			}
		})
	}
}

// TestDatabaseURLThatDoesNotParse: a database URL that net/url and
// PostgreSQL's parser (libpq's rules, which pgx follows) would read
// differently — an unescaped @ / # ? in the password, a fragment, a host
// that is no host name — is refused, from the file, SWEEPER_DATABASE_URL
// or its _FILE, by a message quoting none of it.
func TestDatabaseURLThatDoesNotParse(t *testing.T) {
	t.Parallel()
	const malformed = "does not parse as a URL; percent-encode @ / # ? in the password (%40 %2F %23 %3F)"
	for _, c := range []struct {
		desc, url string
		want      string // "" when accepted; else the problem after "database.url: [VARIABLE ]"
	}{
		{"host and port", "postgres://127.0.0.1:5432/sweeper", ""},
		{"postgresql scheme and a query", "postgresql://db.internal/ledger?sslmode=require", ""},
		{"user without password", "postgres://sweeper@db.internal/ledger", ""},
		{"socket directory", "postgres:///sweeper?host=/var/run/postgresql", ""},
		{"IPv6", "postgres://[::1]:5432/sweeper", ""},
		{"several hosts", "postgres://db1:5432,db2:5433/sweeper?target_session_attrs=read-write", ""},
		{"underscore in a host name", "postgres://db_1/sweeper", ""},
		{"encoded @ in a parameter", "postgres://dbhost/sweeper?application_name=ops%40host", ""},
		{"encoded password", "postgres://app:Xq7%40Zr9%2F%23%3F@dbhost/x", ""},
		{"colon in the password", "postgres://app:Xq7:Zr9@dbhost/x", ""},

		{"slash in the password", "postgres://app:Xq7/Zr9@dbhost/x", malformed},
		{"slash after digits in the password", "postgres://app:4567/Zr9@dbhost/x", malformed},
		{"hash in the password", "postgres://app:Xq7#Zr9@dbhost/x", malformed},
		{"question mark in the password", "postgres://app:Xq7?Zr9@dbhost/x", malformed},
		{"at sign in the password", "postgres://app:Xq7@Zr9@dbhost/x", malformed},
		{"space in the password", "postgres://app:Xq7 Zr9@dbhost/x", malformed},
		{"bad escape in the password", "postgres://app:Xq7%zzZr9@dbhost/x", malformed},
		{"fragment", "postgres://dbhost/x#Zr9", malformed},
		{"port not a number", "postgres://dbhost:Zr9/x", malformed},
		{"port out of range", "postgres://dbhost:99999/x", malformed},
		{"host not a host name", "postgres://db%20host/x", malformed},
		{"at sign in a parameter before any path", "postgres://dbhost?application_name=Xq7@Zr9", malformed},
		{"IPv6 not an address", "postgres://[Zr9]:5432/x", malformed},
		{"another scheme", "mysql://dbhost/x", "must be a postgres:// URL"},
		{"scheme in capitals", "POSTGRES://dbhost/x", "must be a postgres:// URL"},
		{"one slash", "postgres:/dbhost", "must be a postgres:// URL"},
		{"key/value", "host=dbhost dbname=x", "must be a postgres:// URL"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "url")
			if err := os.WriteFile(file, []byte(c.url+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			noURL := strings.Replace(minimal, `url = "postgres://127.0.0.1:5432/sweeper"`, "", 1)
			for _, src := range []struct {
				name, text string
				vars       map[string]string
				prefix     string
			}{
				{"file", strings.Replace(minimal, "postgres://127.0.0.1:5432/sweeper", strings.ReplaceAll(c.url, `\`, `\\`), 1), nil, "database.url: "},
				{"variable", noURL, map[string]string{config.EnvDatabaseURL: c.url}, "database.url: SWEEPER_DATABASE_URL "},
				{"variable's file", noURL, map[string]string{config.EnvDatabaseURL + "_FILE": file}, "database.url: SWEEPER_DATABASE_URL_FILE "},
			} {
				_, err := config.Parse(src.text, kinds, env(src.vars))
				if src.name == "file" && strings.Contains(c.url, ":Xq7") && c.want == "" {
					// A well-formed password in the file is the password rule's.
					if err == nil || !strings.Contains(err.Error(), "must not contain a password") {
						t.Errorf("from the file: %v", err)
					}
					continue
				}
				switch {
				case c.want == "" && err != nil:
					t.Errorf("from the %s: refused: %v", src.name, err)
				case c.want != "" && (err == nil || err.Error() != src.prefix+c.want):
					t.Errorf("from the %s: err = %v, want %s%s", src.name, err, src.prefix, c.want)
				}
				if err != nil {
					for _, part := range []string{"Xq7", "Zr9", "4567", "dbhost", "99999"} {
						if strings.Contains(err.Error(), part) {
							t.Errorf("from the %s: the error quotes %q: %v", src.name, part, err)
						}
					}
				}
			}
		})
	}
}

// TestSettleWindow: settle_window is a key of every provider block; when
// not written it is the kind's (Stripe's search lags, the http protocol's
// does not), and waiting it out spends no budget, so it may be longer than
// stale_after + lookup_budget.
func TestSettleWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc, block string
		want        time.Duration
		wantErr     string
	}{
		{desc: "stripe's default", block: "kind = \"stripe\"\nsecret_key_env = \"PAY_KEY\"", want: 10 * time.Minute},
		{desc: "http's default", block: "kind = \"http\"\nurl = \"https://lookup.example.com/\"", want: 0},
		{desc: "written for http", block: "kind = \"http\"\nurl = \"https://lookup.example.com/\"\nsettle_window = \"2m\"", want: 2 * time.Minute},
		{desc: "zero for stripe", block: "kind = \"stripe\"\nsecret_key_env = \"PAY_KEY\"\nsettle_window = \"0s\"", want: 0},
		{desc: "longer than stale_after + lookup_budget", block: "kind = \"stripe\"\nsecret_key_env = \"PAY_KEY\"\nstale_after = \"1m\"\nlookup_budget = \"5m\"\nsettle_window = \"1h\"", want: time.Hour},
		{desc: "negative", block: "kind = \"stripe\"\nsecret_key_env = \"PAY_KEY\"\nsettle_window = \"-1m\"",
			wantErr: "providers.pay.settle_window: must be between 0s and 24h"},
		{desc: "invalid", block: "kind = \"stripe\"\nsecret_key_env = \"PAY_KEY\"\nsettle_window = \"later\"",
			wantErr: `providers.pay.settle_window: invalid duration "later": use a number and a unit, e.g. 90s, 15m, 24h`},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			text := minimal + "\n[providers.pay]\n" + c.block + "\n"
			cfg, err := config.Parse(text, kinds, env(map[string]string{"PAY_KEY": "rk_test_x"}))
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("err = %v\nwant  %s", err, c.wantErr)
				}
			case err != nil:
				t.Errorf("refused: %v", err)
			case cfg.Providers["pay"].SettleWindow.Duration != c.want:
				t.Errorf("settle_window = %s, want %s", cfg.Providers["pay"].SettleWindow.Duration, c.want)
			}
		})
	}
}

// TestNoLookupsSkipsProviderCredentials: with NoLookups, a provider whose
// credential variable is unset loads (the command never builds it), a
// name that is not a variable name is still refused, and Slack's secrets
// are still required; without it, the unset variable is a problem.
func TestNoLookupsSkipsProviderCredentials(t *testing.T) {
	t.Parallel()
	text := minimal + `
[providers.mailer]
kind = "http"
url = "https://n8n.example.com/webhook/sweeper-lookup"
token_env = "MAILER_LOOKUP_TOKEN"

[providers.mailer_db]
kind = "postgres"
dsn_env = "MAILER_DB_DSN"
query = "SELECT id, created_at, payload_hash FROM sent WHERE op_key = @op_key"
`
	noLookups := config.Options{NoLookups: true}
	cfg, err := config.ParseWith(text, kinds, env(nil), noLookups)
	if err != nil {
		t.Errorf("NoLookups, credentials unset: %v", err)
	} else {
		// check-config says how the query matches.
		var out bytes.Buffer
		if err := cfg.WriteTOML(&out, env(nil)); err != nil {
			t.Fatal(err)
		}
		if want := "\n# Notes\n# providers.mailer_db.query: binds @op_key but returns no op_key column, so it matches by resemblance"; !strings.Contains(out.String(), want) {
			t.Errorf("check-config's output lacks %q:\n%s", want, out.String())
		}
	}
	_, err = config.Parse(text, kinds, env(nil))
	for _, want := range []string{
		"providers.mailer.token_env: environment variable MAILER_LOOKUP_TOKEN is not set",
		"providers.mailer_db.dsn_env: environment variable MAILER_DB_DSN is not set",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("strict: error lacks %q: %v", want, err)
		}
	}
	bad := strings.Replace(text, `token_env = "MAILER_LOOKUP_TOKEN"`, `token_env = "MAILER LOOKUP"`, 1)
	if _, err := config.ParseWith(bad, kinds, env(nil), noLookups); err == nil ||
		!strings.Contains(err.Error(), `providers.mailer.token_env: "MAILER LOOKUP" is not an environment variable name`) {
		t.Errorf("NoLookups, bad name: %v", err)
	}
	slack := strings.Replace(text, "[providers.mailer]", "[slack]\nchannel = \"C0REVIEW\"\n\n[providers.mailer]", 1)
	if _, err := config.ParseWith(slack, kinds, env(nil), noLookups); err == nil ||
		!strings.Contains(err.Error(), "slack.channel: environment variable SLACK_BOT_TOKEN is not set") {
		t.Errorf("NoLookups, Slack on without its token: %v", err)
	}
}

// TestCommandsReadOnlyTheSecretsTheyUse: with Slack on and River's UI on,
// a command that uses neither (a migration job, `tickets list`) loads with
// none of their secrets set; one that posts to Slack but serves no clicks
// needs the bot token and not the signing secret; the full set (run,
// check-config) needs every one, each named by the key that needs it.
func TestCommandsReadOnlyTheSecretsTheyUse(t *testing.T) {
	t.Parallel()
	text := strings.Replace(minimal, "[review]", "[slack]\nchannel = \"C0REVIEW\"\n\n[http]\nriver_ui = true\n\n[review]", 1)
	if !strings.Contains(text, "river_ui") {
		t.Fatal("minimal config has no [review] section to put [slack] before")
	}
	for _, tc := range []struct {
		desc string
		opts config.Options
		env  map[string]string
		want []string // problems, in order; none: loads
	}{
		{desc: "database only", opts: config.Options{NoLookups: true, NoSlack: true, NoRiverUI: true}},
		{desc: "posts to Slack, no token", opts: config.Options{NoLookups: true, NoInteractivity: true, NoRiverUI: true},
			want: []string{"slack.channel: environment variable SLACK_BOT_TOKEN is not set (nor SLACK_BOT_TOKEN_FILE)"}},
		{desc: "posts to Slack, token set", opts: config.Options{NoLookups: true, NoInteractivity: true, NoRiverUI: true},
			env: map[string]string{config.EnvSlackToken: "xoxb-1"}},
		{desc: "everything", opts: config.Options{}, want: []string{
			"slack.channel: environment variable SLACK_BOT_TOKEN is not set (nor SLACK_BOT_TOKEN_FILE)",
			"slack.channel: environment variable SLACK_SIGNING_SECRET is not set (nor SLACK_SIGNING_SECRET_FILE)",
			"http.river_ui: environment variable SWEEPER_RIVERUI_USER is not set (nor SWEEPER_RIVERUI_USER_FILE)",
			"http.river_ui: environment variable SWEEPER_RIVERUI_PASSWORD is not set (nor SWEEPER_RIVERUI_PASSWORD_FILE)",
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := config.ParseWith(text, kinds, env(tc.env), tc.opts)
			var got []string
			if cfgErr, ok := errors.AsType[*config.Error](err); ok {
				for _, p := range cfgErr.Problems {
					got = append(got, p.Error())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnvironmentSetsAnyKey: every key can be set by SWEEPER_<SECTION>_<KEY>
// (SWEEPER_PROVIDERS_<NAME>_<KEY> for a provider block the file names,
// its kind's keys included), over the file's value; a value is converted by
// the key's type, a list or a table written as TOML; one that does not
// convert names the variable and the key; and each key says where its
// value came from.
func TestEnvironmentSetsAnyKey(t *testing.T) {
	t.Parallel()
	text := minimal + `
[sweep]
batch_size = 100

[providers.sms-alerts]
kind = "sim"
simulated = true
rate_limit = 5.0
`
	vars := map[string]string{
		"SWEEPER_HTTP_LISTEN":                     "0.0.0.0:8080",
		"SWEEPER_HTTP_ADMIN_LISTEN":               "0.0.0.0:9090",
		"SWEEPER_SWEEP_BATCH_SIZE":                "250",
		"SWEEPER_PROVIDERS_SMS_ALERTS_RATE_LIMIT": "2.5",
		"SWEEPER_PROVIDERS_SMS_ALERTS_LATENCY":    "1s",
		"SWEEPER_REVIEW_ESCALATION":               `[{owner = "U0NEXT1", priority = "high", window = "2h"}]`,
		"SWEEPER_REVIEW_OWNERS_WORKFLOWS":         `{billing = "U0BILLING"}`,
	}
	cfg, err := config.Parse(text, kinds, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["sms-alerts"]
	if cfg.HTTP.Listen != "0.0.0.0:8080" || cfg.HTTP.AdminListen != "0.0.0.0:9090" || cfg.Sweep.BatchSize != 250 ||
		p.RateLimit != 2.5 || len(cfg.Review.Escalation) != 1 || cfg.Review.Escalation[0].Window.Duration != 2*time.Hour ||
		cfg.Review.Owners.Workflows["billing"] != "U0BILLING" {
		t.Errorf("environment not applied: http %+v, batch %d, rate %g, escalation %+v, owners %v",
			cfg.HTTP, cfg.Sweep.BatchSize, p.RateLimit, cfg.Review.Escalation, cfg.Review.Owners.Workflows)
	}
	if got := fmt.Sprint(p.Settings); !strings.Contains(got, "1s") {
		t.Errorf("the kind's own key: settings %s, want latency 1s", got)
	}
	for path, want := range map[string]string{
		"http.listen":                  "environment SWEEPER_HTTP_LISTEN",
		"sweep.batch_size":             "environment SWEEPER_SWEEP_BATCH_SIZE",
		"providers.sms-alerts.kind":    "file",
		"review.default_owner":         "file",
		"review.escalation":            "environment SWEEPER_REVIEW_ESCALATION",
		"review.escalation.window":     "environment SWEEPER_REVIEW_ESCALATION",
		"river.max_workers":            "default",
		"providers.sms-alerts.latency": "environment SWEEPER_PROVIDERS_SMS_ALERTS_LATENCY",
	} {
		if got := cfg.Source(path); got != want {
			t.Errorf("Source(%s) = %q, want %q", path, got, want)
		}
	}

	_, err = config.Parse(text, kinds, env(map[string]string{
		"SWEEPER_HTTP_RIVER_UI":     "yes please",
		"SWEEPER_SWEEP_BATCH_SIZE":  "lots",
		"SWEEPER_REVIEW_ESCALATION": "[{owner = ",
	}))
	for _, want := range []string{
		`http.river_ui (environment, for SWEEPER_HTTP_RIVER_UI): "yes please" is not true or false`,
		`sweep.batch_size (environment, for SWEEPER_SWEEP_BATCH_SIZE): "lots" is not a whole number`,
		`review.escalation (environment, for SWEEPER_REVIEW_ESCALATION): not a TOML value`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// An environment that sets a value wrong for its key is validated as
	// a file's would be.
	if _, err := config.Parse(text, kinds, env(map[string]string{"SWEEPER_SWEEP_BATCH_SIZE": "0"})); err == nil ||
		!strings.Contains(err.Error(), "sweep.batch_size") {
		t.Errorf("batch_size 0 from the environment: %v", err)
	}
}

// TestPlaceholdersGiveWayToChosenValues: what makes a copied example
// valid is choosing its values, in the file or the environment: the
// placeholder check applies to the effective values, not the file's text.
func TestPlaceholdersGiveWayToChosenValues(t *testing.T) {
	t.Parallel()
	const copied = `
[database]
url = "postgres://CHANGE-ME@localhost:5432/ledger"

[review]
default_owner = "U0OWNER1"

[providers.orders_api]
kind = "http"
url = "https://CHANGE-ME.invalid/sweeper/lookup"

[providers.sim]
kind = "sim"
`
	for _, tc := range []struct {
		desc    string
		text    string
		environ map[string]string
		want    []string // problems, in order; none: valid
	}{
		{desc: "untouched", text: copied, want: []string{
			"database.url: still the placeholder CHANGE-ME; set your ledger's URL here or in SWEEPER_DATABASE_URL",
			"providers.orders_api.url: still the placeholder CHANGE-ME; set it here or in SWEEPER_PROVIDERS_ORDERS_API_URL",
			"providers.sim.simulated: kind sim answers from the rules in this file, not from a provider: it settles nothing real. " +
				"Set simulated = true in the block if that is what you want (the demo, tests, benchmarks)",
		}},
		{desc: "every value chosen in the environment", text: copied, environ: map[string]string{
			config.EnvDatabaseURL:              "postgres://sweeper@db.internal/ledger",
			"SWEEPER_PROVIDERS_ORDERS_API_URL": "https://orders.internal/sweeper/lookup",
			"SWEEPER_PROVIDERS_SIM_SIMULATED":  "true",
		}},
		{desc: "every value chosen in the file", text: strings.NewReplacer(
			"postgres://CHANGE-ME@localhost:5432/ledger", "postgres://sweeper@db.internal/ledger",
			"https://CHANGE-ME.invalid/", "https://orders.internal/",
			"kind = \"sim\"\n", "kind = \"sim\"\nsimulated = true\n").Replace(copied)},
		{desc: "the placeholder written into the environment", text: strings.Replace(copied, "kind = \"sim\"\n", "kind = \"sim\"\nsimulated = true\n", 1),
			environ: map[string]string{config.EnvDatabaseURL: "postgres://sweeper@CHANGE-ME/ledger", "SWEEPER_PROVIDERS_ORDERS_API_URL": "https://orders.internal/"},
			want:    []string{"database.url: still the placeholder CHANGE-ME; set your ledger's URL here or in SWEEPER_DATABASE_URL"}},
		{desc: "postgres allowed when said", text: strings.Replace(minimal, "[database]\n", "[database]\nallow_maintenance_database = true\n", 1),
			environ: map[string]string{config.EnvDatabaseURL: "postgres://sweeper@db.internal/postgres"}},
		{desc: "postgres refused by default", text: minimal,
			environ: map[string]string{config.EnvDatabaseURL: "postgres://sweeper@db.internal:5432/postgres?sslmode=require"},
			want: []string{"database.url: names the maintenance database postgres; create a database for the ledger (CREATE DATABASE ledger) " +
				"and name it in the URL, or set database.allow_maintenance_database = true if postgres is the only database you have (some hosted offers)"}},
		{desc: "a database named like postgres is another", text: minimal,
			environ: map[string]string{config.EnvDatabaseURL: "postgres://sweeper@db.internal/postgres_ledger"}},
		{desc: "no database named: the server's default for the user", text: minimal,
			environ: map[string]string{config.EnvDatabaseURL: "postgres://ledger@db.internal"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse(tc.text, kinds, env(tc.environ))
			var got []string
			if cfgErr, ok := errors.AsType[*config.Error](err); ok {
				for _, p := range cfgErr.Problems {
					got = append(got, p.Error())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLogSection checks log.level and log.format: their defaults, the
// environment's SWEEPER_LOG_LEVEL and SWEEPER_LOG_FORMAT, and a value
// refused with the key's name.
func TestLogSection(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc            string
		text            string
		vars            map[string]string
		level           slog.Level
		format, wantErr string
	}{
		{desc: "defaults: info, the format by stderr", level: slog.LevelInfo},
		{desc: "from the file", text: "[log]\nlevel = \"warn\"\nformat = \"json\"\n", level: slog.LevelWarn, format: "json"},
		{desc: "from the environment, over the file", text: "[log]\nlevel = \"warn\"\n",
			vars: map[string]string{"SWEEPER_LOG_LEVEL": "debug", "SWEEPER_LOG_FORMAT": "text"}, level: slog.LevelDebug, format: "text"},
		{desc: "error level", vars: map[string]string{"SWEEPER_LOG_LEVEL": "error"}, level: slog.LevelError},
		{desc: "unknown level", text: "[log]\nlevel = \"verbose\"\n",
			wantErr: `log.level: must be one of debug, info, warn, error, got "verbose"`},
		{desc: "level in capitals", vars: map[string]string{"SWEEPER_LOG_LEVEL": "INFO"},
			wantErr: `log.level: must be one of debug, info, warn, error, got "INFO"`},
		{desc: "unknown format", vars: map[string]string{"SWEEPER_LOG_FORMAT": "logfmt"},
			wantErr: `log.format: must be json or text (or empty: text on a terminal, JSON otherwise), got "logfmt"`},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse(minimal+c.text, kinds, env(c.vars))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want it to hold %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Log.SlogLevel(); got != c.level || cfg.Log.Format != c.format {
				t.Errorf("level %v format %q, want %v %q", got, cfg.Log.Format, c.level, c.format)
			}
			for name := range c.vars {
				path := map[string]string{"SWEEPER_LOG_LEVEL": "log.level", "SWEEPER_LOG_FORMAT": "log.format"}[name]
				if got := cfg.Source(path); got != "environment "+name {
					t.Errorf("Source(%s) = %q", path, got)
				}
			}
		})
	}
}

// TestRetention: retentions too short to keep what the next pass needs are
// refused by key; a retention for resolved tickets needs the directory its
// archive files go to, and an archive directory without it is a mistake.
func TestRetention(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		desc, text, wantErr string
	}{
		{desc: "explicit values", text: "[retention]\noutbox = \"48h\"\njobs = \"2h\"\n"},
		{desc: "resolved tickets kept", text: "[retention]\nresolved_tickets = \"0s\"\n"},
		{desc: "outbox under an hour", text: "[retention]\noutbox = \"30m\"\n", wantErr: "retention.outbox: must be at least 1h"},
		{desc: "jobs under a minute", text: "[retention]\njobs = \"10s\"\n", wantErr: "retention.jobs: must be at least 1m"},
		{desc: "outbox malformed", text: "[retention]\noutbox = \"30d\"\n", wantErr: `retention.outbox: invalid duration "30d"`},
		{desc: "resolved tickets archived", text: "[retention]\nresolved_tickets = \"8760h\"\narchive_dir = " + strconv.Quote(dir) + "\n"},
		{desc: "resolved tickets without an archive", text: "[retention]\nresolved_tickets = \"8760h\"\n",
			wantErr: "retention.archive_dir: is required with retention.resolved_tickets"},
		{desc: "archive dir relative", text: "[retention]\nresolved_tickets = \"8760h\"\narchive_dir = \"archive\"\n",
			wantErr: `retention.archive_dir: "archive" must be an absolute path`},
		{desc: "archive dir missing", text: "[retention]\nresolved_tickets = \"8760h\"\narchive_dir = " + strconv.Quote(filepath.Join(dir, "nope")) + "\n",
			wantErr: "retention.archive_dir: stat "},
		{desc: "archive dir a file", text: "[retention]\nresolved_tickets = \"8760h\"\narchive_dir = " + strconv.Quote(file) + "\n",
			wantErr: "is not a directory"},
		{desc: "archive dir alone", text: "[retention]\narchive_dir = " + strconv.Quote(dir) + "\n",
			wantErr: "retention.archive_dir: is set but retention.resolved_tickets is not"},
		{desc: "resolved tickets too soon", text: "[retention]\nresolved_tickets = \"1h\"\narchive_dir = " + strconv.Quote(dir) + "\n",
			wantErr: `retention.resolved_tickets: must be "0s" (keep for good) or at least 24h`},
		{desc: "resolved tickets before their alerts", text: "[retention]\nresolved_tickets = \"48h\"\narchive_dir = " + strconv.Quote(dir) + "\n",
			wantErr: "retention.resolved_tickets: must not be shorter than retention.outbox (720h)"},
		{desc: "unknown key", text: "[retention]\nexport_dir = \"/var/lib/sweeper\"\n", wantErr: "retention.export_dir"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse(minimal+c.text, kinds, env(nil))
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("err = %v\nwant  %s", err, c.wantErr)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case c.desc == "explicit values" && (cfg.Retention.Outbox.Duration != 48*time.Hour || cfg.Retention.Jobs.Duration != 2*time.Hour):
				t.Errorf("retention = %+v", cfg.Retention)
			}
		})
	}
}

// TestAlertGroupBounds: slack.group_detail_limit and slack.group_interval
// take the environment by the generic scheme, and values out of their
// bounds are refused, each error naming its key and the bound.
func TestAlertGroupBounds(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse(minimal, kinds, env(map[string]string{
		"SWEEPER_SLACK_GROUP_DETAIL_LIMIT": "0",
		"SWEEPER_SLACK_GROUP_INTERVAL":     "2m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Slack.DetailLimit() != 0 || cfg.Slack.GroupInterval.Duration != 2*time.Minute {
		t.Errorf("from the environment: detail limit %d, interval %s; want 0 and 2m", cfg.Slack.DetailLimit(), cfg.Slack.GroupInterval.Duration)
	}
	for path, want := range map[string]string{
		"slack.group_detail_limit": "environment SWEEPER_SLACK_GROUP_DETAIL_LIMIT",
		"slack.group_interval":     "environment SWEEPER_SLACK_GROUP_INTERVAL",
	} {
		if got := cfg.Source(path); got != want {
			t.Errorf("Source(%s) = %q, want %q", path, got, want)
		}
	}
	for _, tc := range []struct {
		desc, text, want string
	}{
		{"a negative limit", "group_detail_limit = -1", "slack.group_detail_limit: must be between 0 (the group's message alone) and 1000"},
		{"a limit past the bound", "group_detail_limit = 1001", "slack.group_detail_limit: must be between 0 (the group's message alone) and 1000"},
		{"an interval too short", `group_interval = "1s"`, "slack.group_interval: must be at least 5s"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := config.Parse(minimal+"\n[slack]\n"+tc.text+"\n", kinds, env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAckTimeout: review.ack_timeout is off by default, applies to level 0
// and to every escalation level that sets none of its own; a level's own
// value (0s included) wins; negative, unparsable and sub-minute values are
// refused under their key.
func TestAckTimeout(t *testing.T) {
	t.Parallel()
	levels := func(first, second string) string {
		s := "\n[[review.escalation]]\nowner = \"U0SECOND1\"\npriority = \"high\"\nwindow = \"4h\"\n"
		if first != "" {
			s += "ack_timeout = " + strconv.Quote(first) + "\n"
		}
		s += "\n[[review.escalation]]\nowner = \"U0ONCALL1\"\npriority = \"urgent\"\nwindow = \"8h\"\n"
		if second != "" {
			s += "ack_timeout = " + strconv.Quote(second) + "\n"
		}
		return s
	}
	for _, c := range []struct {
		desc, review, levels string
		want                 []time.Duration // review.ack_timeout, then each level's
		wantErr              string
	}{
		{desc: "default: off everywhere", levels: levels("", ""), want: []time.Duration{0, 0, 0}},
		{desc: "review's applies to every level", review: `ack_timeout = "30m"`, levels: levels("", ""),
			want: []time.Duration{30 * time.Minute, 30 * time.Minute, 30 * time.Minute}},
		{desc: "a level's own wins, 0s turns it off", review: `ack_timeout = "30m"`, levels: levels("0s", "1h"),
			want: []time.Duration{30 * time.Minute, 0, time.Hour}},
		{desc: "a level's own without review's", levels: levels("", "15m"), want: []time.Duration{0, 0, 15 * time.Minute}},
		{desc: "no levels", review: `ack_timeout = "1h30m"`, want: []time.Duration{90 * time.Minute}},
		{desc: "negative", review: `ack_timeout = "-5m"`,
			wantErr: "review.ack_timeout: must not be negative: 0s for no timeout, or at least 1m"},
		{desc: "unparsable", review: `ack_timeout = "30 minutes"`,
			wantErr: `review.ack_timeout: invalid duration "30 minutes": use a number and a unit, e.g. 90s, 15m, 24h`},
		{desc: "under a minute", review: `ack_timeout = "30s"`, wantErr: "review.ack_timeout: must be 0s (no timeout) or at least 1m"},
		{desc: "a level's negative", levels: levels("", "-1h"),
			wantErr: "review.escalation[1].ack_timeout: must not be negative"},
		{desc: "a level's unparsable", levels: levels("soon", ""),
			wantErr: `review.escalation[0].ack_timeout: invalid duration "soon"`},
		{desc: "not a string", review: `ack_timeout = 30`, wantErr: "review.ack_timeout"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(minimal, "default_owner = \"U0OWNER1\"\n", "default_owner = \"U0OWNER1\"\n"+c.review+"\n", 1) + c.levels
			cfg, err := config.Parse(text, kinds, env(nil))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("err = %v\nwant  %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []time.Duration{cfg.Review.AckTimeout.Duration}
			for _, l := range cfg.Review.Escalation {
				got = append(got, l.AckTimeout.Duration)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("ack timeouts (-want +got):\n%s", diff)
			}
			// What `sweeper config` prints loads back the same.
			var out bytes.Buffer
			if err := cfg.WriteTOML(&out, env(nil)); err != nil {
				t.Fatal(err)
			}
			again, err := config.Parse(out.String(), kinds, env(nil))
			if err != nil {
				t.Fatalf("printed config: %v\n%s", err, out.String())
			}
			if diff := cmp.Diff(cfg.Review, again.Review, cmpopts.IgnoreUnexported(config.Duration{})); diff != "" {
				t.Errorf("printed and loaded again (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnknownEnvironmentVariableIsRefused: a SWEEPER_ variable that sets
// no key is refused by name with the nearest key's variable suggested, as
// an unknown key in the file is; a provider block's variable must name a
// block the file has and a key of its kind. The variables that are no key
// (the configuration's path, the database URL, the fixed credentials, the
// ones an *_env key names, their _FILE forms) pass.
func TestUnknownEnvironmentVariableIsRefused(t *testing.T) {
	t.Parallel()
	text := minimal + `
[providers.orders_api]
kind = "http"
url = "https://orders.example.com/lookup"
token_env = "SWEEPER_ORDERS_TOKEN"

[providers.sms-alerts]
kind = "sim"
simulated = true

[webhook]
url = "https://n8n.example.com/webhook/sweeper"
secret_env = "SWEEPER_WEBHOOK_SECRET"
`
	parse := func(environ ...string) error {
		vars := map[string]string{}
		for _, kv := range environ {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		_, err := config.ParseWith(text, kinds, env(vars), config.Options{Environ: environ})
		return err
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("postgres://127.0.0.1:5432/sweeper\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := parse(
		"SWEEPER_CONFIG=/etc/sweeper/sweeper.toml", "SWEEPER_DATABASE_URL_FILE="+secret,
		"SWEEPER_RIVERUI_USER=ops", "SWEEPER_WEB_COOKIE_KEY_FILE="+secret,
		"SWEEPER_TEST_DATABASE_URL=postgres://127.0.0.1/x", "SWEEPER_CONFIG_FILE=./sweeper.toml",
		"SWEEPER_ORDERS_TOKEN=t0ken", "SWEEPER_WEBHOOK_SECRET_FILE="+secret,
		"SWEEPER_SWEEP_BATCH_SIZE=250", "SWEEPER_PROVIDERS_ORDERS_API_URL=https://orders.internal/lookup",
		"SWEEPER_PROVIDERS_SMS_ALERTS_LATENCY=1s", "SWEEPER_HTTP_LISTEN=0.0.0.0:8080",
		"SWEEPER_NOT_SET_AT_ALL=", "HOME=/root", "PATH=/usr/bin",
	); err != nil {
		t.Fatalf("known variables refused: %v", err)
	}
	err := parse(
		"SWEEPER_SWEP_BATCH_SIZE=250",
		"SWEEPER_PROVIDERS_ORDRES_API_URL=https://orders.internal/lookup",
		"SWEEPER_PROVIDERS_SMS_ALERTS_URL=https://x.example.com", // a key of another kind
		"SWEEPER_PROVIDERS_STRIPE_SECRET_KEY_ENV=K",              // no such block
		"SWEEPER_HTTP_LISTEN_FILE=/run/listen",                   // only secrets have _FILE forms
		"SWEEPER_SOMETHING_ELSE_ENTIRELY=1",
	)
	for _, want := range []string{
		"SWEEPER_SWEP_BATCH_SIZE: environment variable names no configuration key; did you mean SWEEPER_SWEEP_BATCH_SIZE (sweep.batch_size)?",
		"SWEEPER_PROVIDERS_ORDRES_API_URL: environment variable names no configuration key (a provider block's is SWEEPER_PROVIDERS_<NAME>_<KEY>, for a block the file has and a key of its kind); did you mean SWEEPER_PROVIDERS_ORDERS_API_URL (providers.orders_api.url)?",
		"SWEEPER_PROVIDERS_SMS_ALERTS_URL: environment variable names no configuration key",
		"SWEEPER_PROVIDERS_STRIPE_SECRET_KEY_ENV: environment variable names no configuration key",
		"SWEEPER_HTTP_LISTEN_FILE: environment variable names no configuration key; did you mean SWEEPER_HTTP_LISTEN (http.listen)?",
		"SWEEPER_SOMETHING_ELSE_ENTIRELY: environment variable names no configuration key\n",
	} {
		if err == nil || !strings.Contains(err.Error()+"\n", want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// Without the environment's list (a nil Environ) nothing is checked.
	if _, err := config.ParseWith(text, kinds, env(map[string]string{
		"SWEEPER_ORDERS_TOKEN": "t0ken", "SWEEPER_WEBHOOK_SECRET": "s", "SWEEPER_SWEP_BATCH_SIZE": "250",
	}), config.Options{}); err != nil {
		t.Errorf("no environment: %v", err)
	}
}

// TestRetentionReportsEveryWrongKey: two wrong retention keys are both
// reported, whichever they are.
func TestRetentionReportsEveryWrongKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc, text string
		want       []string
	}{
		{desc: "resolved tickets too soon, archive dir relative", text: "[retention]\nresolved_tickets = \"1h\"\narchive_dir = \"archive\"\n",
			want: []string{`retention.resolved_tickets: must be "0s" (keep for good) or at least 24h`, `retention.archive_dir: "archive" must be an absolute path`}},
		{desc: "resolved tickets before their alerts, archive dir relative", text: "[retention]\nresolved_tickets = \"48h\"\narchive_dir = \"archive\"\n",
			want: []string{"retention.resolved_tickets: must not be shorter than retention.outbox", `retention.archive_dir: "archive" must be an absolute path`}},
		{desc: "resolved tickets malformed, archive dir relative", text: "[retention]\nresolved_tickets = \"30d\"\narchive_dir = \"archive\"\n",
			want: []string{`retention.resolved_tickets: invalid duration "30d"`, `retention.archive_dir: "archive" must be an absolute path`}},
		{desc: "outbox and jobs malformed", text: "[retention]\noutbox = \"30d\"\njobs = \"1d\"\n",
			want: []string{`retention.outbox: invalid duration "30d"`, `retention.jobs: invalid duration "1d"`}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse(minimal+c.text, kinds, env(nil))
			for _, want := range c.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to contain %s", err, want)
				}
			}
		})
	}
}
