package config_test

import (
	"bytes"
	"errors"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/config"
)

// fuzzSecret is every credential's value in FuzzParse's environment.
const fuzzSecret = "fuzz-s3cret-value"

// fuzzEnv sets every credential variable, so that validation gets past
// them, and leaves SWEEPER_DATABASE_URL unset, so that database.url comes
// from the text, as the [ledger] keys do (their variables name no
// credential). No NAME_FILE is set: nothing is read from disk.
func fuzzEnv(name string) string {
	if name == config.EnvDatabaseURL || strings.HasSuffix(name, "_FILE") || strings.HasPrefix(name, "SWEEPER_LEDGER_") {
		return ""
	}
	return fuzzSecret
}

// problemKey is how a validation problem starts: the TOML key it is about
// (providers.sim.stale_after, review.escalation[0].owner, slack.channel).
var problemKey = regexp.MustCompile(`^(database|ledger|schedules|sweep|river|providers|review|slack|http|log|retention|web|pagerduty|webhook|routes)\b`)

// FuzzParse: whatever the text, Parse does not panic. It rejects a text
// with an error naming, for each problem, the key or the line; it accepts
// one whose effective configuration, printed by WriteTOML, holds no secret
// and parses back to the same configuration.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		minimal,
		minimal + "\n[providers.sim]\nkind = \"sim\"\nsimulated = true\nlatency = \"5ms\"\n[[providers.sim.rules]]\nmatch = \"found-*\"\noutcome = \"found\"\n",
		minimal + `
[schedules]
sweep = "CRON_TZ=Europe/Paris @every 30s"

[providers."orders.v2"]
kind = "http"
url = "https://orders.example.com/lookup"
token_env = "ORDERS_TOKEN"
stale_after = "1h30m"
lookup_timeout = "1.5s"
rate_limit = 0.25

[providers.payments]
kind = "stripe"
secret_key_env = "STRIPE_KEY"
objects = ["payment_intents", "charges"]

[providers.sms]
kind = "twilio"
account_sid_env = "TWILIO_SID"
auth_token_env = "TWILIO_TOKEN"

[providers.shop]
kind = "postgres"
dsn_env = "SHOP_DSN"
query = "SELECT id, created_at, payload_hash FROM orders WHERE op_key = @op_key"

[review.owners.workflows]
"onboarding emails" = "U0OWNER2"

[[review.escalation]]
owner = "U0LEAD01"
priority = "high"
window = "4h"

[slack]
channel = "C0OPSREVIEW"
reviewers = ["U0LEAD01"]
`,
		"[database]\nurl = \"postgres://127.0.0.1:5432/sweeper?sslmode=disable&password=\"\n[review]\ndefault_owner = \"U0OWNER1\"\n",
		"[database]\nurl = \"postgres://sweeper:pw@127.0.0.1/sweeper\"\n",
		"[database]\nurl = \"postgres://app:4567/ss@db/x#frag\"\n[review]\ndefault_owner = \"U0OWNER1\"\n",
		minimal + "\n[schedules]\nsweep = \"0 0 30 2 *\"\nnotify = \"CRON_TZ=UTC @every 500ms\"\nescalate = \"TZ=UTC\"\n",
		"[sweep]\nbatch_size = \"many\"\n",
		"[providers.x]\nkind = \"sim\"\nrules = 3\n",
		"[[providers]]\n",
		"a = [1, 2\n",
		"[review]\ndefault_owner = \"two people\"\n[review]\n",
		"\x00",
		"",
	} {
		f.Add(seed)
	}
	if b, err := os.ReadFile("../config.example.toml"); err == nil {
		f.Add(string(b))
	} else {
		f.Fatal(err)
	}
	opts := cmp.Options{cmp.Comparer(func(a, b config.Duration) bool { return a.Duration == b.Duration }),
		// where each value came from differs, by design; the ledger table
		// is made from the ledger keys, compared
		cmpopts.IgnoreUnexported(config.Config{}, config.Ledger{})}

	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := config.Parse(text, kinds, fuzzEnv)
		if err != nil {
			if cfg != nil {
				t.Errorf("a config alongside error %v", err)
			}
			if problems, ok := errors.AsType[*config.Error](err); ok {
				for _, p := range problems.Problems {
					if msg := p.Error(); !problemKey.MatchString(msg) && !strings.HasSuffix(msg, ": unknown key") {
						t.Errorf("problem %q does not name its key", msg)
					}
				}
			} else if msg := err.Error(); !strings.Contains(msg, "line ") && !strings.HasPrefix(msg, "providers.") {
				t.Errorf("error %q names neither a line nor a key", msg)
			}
			return
		}

		var out bytes.Buffer
		if err := cfg.WriteTOML(&out, fuzzEnv); err != nil {
			t.Fatalf("WriteTOML: %v", err)
		}
		if !strings.Contains(text, fuzzSecret) && strings.Contains(out.String(), fuzzSecret) {
			t.Errorf("printed config carries a secret:\n%s", out.String())
		}
		again, err := config.Parse(out.String(), kinds, fuzzEnv)
		if err != nil {
			t.Fatalf("printed config does not parse: %v\n--- input:\n%s\n--- printed:\n%s", err, text, out.String())
		}
		if diff := cmp.Diff(cfg, again, opts); diff != "" {
			t.Errorf("round trip (-parsed +printed and parsed again):\n%s\n--- printed:\n%s", diff, out.String())
		}
	})
}

// FuzzCheckDatabaseURL: a URL that CheckDatabaseURL accepts is read the same
// way by net/url, which sweeper redacts and prints with, and by pgx, which
// connects with it: the same user, password and hosts, so a password is
// never where the redaction does not look. A refusal never quotes the URL.
func FuzzCheckDatabaseURL(f *testing.F) {
	for _, seed := range []string{
		"postgres://127.0.0.1:5432/sweeper",
		"postgres://sweeper:s3cret@db.internal:5432/ledger?sslmode=disable",
		"postgres://app:pa/ss@db/x",
		"postgres://app:4567/ss@db/x",
		"postgres://app:p#ss@db/x",
		"postgres://app:p@ss@db/x",
		"postgres://app:p?ss@db/x",
		"postgres://db?application_name=a@b",
		"postgres://app:p%40ss@db/x",
		"postgres://db1:5432,db2:5433/x",
		"postgres://[::1]:5432/x",
		"postgres:///x?host=/tmp",
		"postgresql://:pw@/x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := config.CheckDatabaseURL(raw)
		if err != nil {
			if !errors.Is(err, config.ErrMalformedURL) && !errors.Is(err, config.ErrNotPostgresURL) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted, but net/url: %v", err)
		}
		pc, err := pgconn.ParseConfig(raw)
		if err != nil {
			return // pgx refuses it (a bad sslmode, a space): connecting says "invalid URL"
		}
		if name := u.User.Username(); name != "" && name != pc.User {
			t.Errorf("user: net/url %q, pgx %q", name, pc.User)
		}
		if password, ok := u.User.Password(); ok && password != "" && password != pc.Password {
			t.Errorf("password: net/url %q, pgx %q", password, pc.Password)
		}
		if u.Query().Get("host") == "" && !strings.Contains(u.Host, ",") && u.Hostname() != "" && u.Hostname() != pc.Host {
			t.Errorf("host: net/url %q, pgx %q", u.Hostname(), pc.Host)
		}
		// What stands in the password's place once redacted is the mask.
		if _, ok := u.User.Password(); ok {
			redacted, err := url.Parse(config.RedactURL(raw))
			if err != nil {
				t.Fatalf("RedactURL %q: %v", config.RedactURL(raw), err)
			}
			if masked, _ := redacted.User.Password(); masked != "xxxxx" {
				t.Errorf("RedactURL %q: password %q", config.RedactURL(raw), masked)
			}
		}
	})
}
