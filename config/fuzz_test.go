package config_test

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/config"
)

// fuzzSecret is every credential's value in FuzzParse's environment.
const fuzzSecret = "fuzz-s3cret-value"

// fuzzEnv sets every credential variable, so that validation gets past
// them, and leaves SWEEPER_DATABASE_URL unset, so that database.url comes
// from the text. No NAME_FILE is set: nothing is read from disk.
func fuzzEnv(name string) string {
	if name == config.EnvDatabaseURL || strings.HasSuffix(name, "_FILE") {
		return ""
	}
	return fuzzSecret
}

// problemKey is how a validation problem starts: the TOML key it is about
// (providers.sim.stale_after, review.escalation[0].owner, slack.channel).
var problemKey = regexp.MustCompile(`^(database|schedules|sweep|river|providers|review|slack|http)\b`)

// FuzzParse: whatever the text, Parse does not panic. It rejects a text
// with an error naming, for each problem, the key or the line; it accepts
// one whose effective configuration, printed by WriteTOML, holds no secret
// and parses back to the same configuration.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		minimal,
		minimal + "\n[providers.sim]\nkind = \"sim\"\nlatency = \"5ms\"\n[[providers.sim.rules]]\nmatch = \"found-*\"\noutcome = \"found\"\n",
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
	opts := cmp.Comparer(func(a, b config.Duration) bool { return a.Duration == b.Duration })

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
