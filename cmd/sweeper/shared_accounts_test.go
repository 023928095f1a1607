package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
)

// TestCheckConfigNamesSharedAccounts: two Twilio blocks reading one Account
// SID are listed as sharing their records, without the SID or the tokens
// being printed; a block of another account is not listed.
func TestCheckConfigNamesSharedAccounts(t *testing.T) {
	t.Parallel()
	text := `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"

[providers.sms]
kind = "twilio"
account_sid_env = "SMS_SID"
auth_token_env = "SMS_TOKEN"

[providers.sms_alerts]
kind = "twilio"
account_sid_env = "ALERTS_SID"
auth_token_env = "ALERTS_TOKEN"

[providers.sms_eu]
kind = "twilio"
account_sid_env = "EU_SID"
auth_token_env = "EU_TOKEN"
`
	file := filepath.Join(t.TempDir(), "sweeper.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := map[string]string{
		config.EnvDatabaseURL: "postgres://127.0.0.1:5432/sweeper",
		"SMS_SID":             "ACPa55000000000000000000000000000a", "ALERTS_SID": "ACPa55000000000000000000000000000a",
		"EU_SID": "ACPa55000000000000000000000000000b", "SMS_TOKEN": "Pa55-1", "ALERTS_TOKEN": "Pa55-2", "EU_TOKEN": "Pa55-3",
	}
	r := runCLI(t, environ, "check-config", "--config", file)
	if r.code != exitOK {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "Pa55") {
		t.Errorf("a secret was printed:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "#   sms, sms_alerts (twilio):") || strings.Contains(r.stdout, "sms_eu (twilio)") {
		t.Errorf("output does not list sms and sms_alerts alone as sharing an account:\n%s", r.stdout)
	}
}
