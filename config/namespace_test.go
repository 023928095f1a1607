package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/config"
)

// sharedBlocks is two Twilio blocks on one Account SID (read from two
// variables), a Twilio block of another account, two http blocks naming
// one record_namespace, one http block of its own, and two Mailgun blocks
// of one domain.
const sharedBlocks = minimal + `
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

[providers.billing]
kind = "http"
url = "https://erp.internal/lookup"
record_namespace = "erp"

[providers.invoices]
kind = "http"
url = "https://erp.internal/invoices/lookup"
record_namespace = "erp"

[providers.orders]
kind = "http"
url = "https://orders.internal/lookup"

[providers.mail]
kind = "mailgun"
api_key_env = "MG_KEY"
domain = "mg.example.com"

[providers.mail_bulk]
kind = "mailgun"
api_key_env = "MG_KEY_BULK"
domain = "MG.example.com"
`

// TestSharedAccounts: the blocks reaching one account are grouped, from
// the configuration and the credentials alone; blocks of other accounts,
// and blocks that are their own namespace, are not.
func TestSharedAccounts(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{
		"SMS_SID": "AC0123456789abcdef0123456789abcdef", "ALERTS_SID": "AC0123456789abcdef0123456789abcdef",
		"EU_SID": "AC99999999999999999999999999999999", "SMS_TOKEN": "t1", "ALERTS_TOKEN": "t2", "EU_TOKEN": "t3",
		"MG_KEY": "k1", "MG_KEY_BULK": "k2",
	})
	cfg, err := config.Parse(sharedBlocks, kinds, getenv)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.SharedAccounts(getenv)
	var groups []string
	for _, g := range got {
		groups = append(groups, g.Kind+": "+strings.Join(g.Blocks, ","))
		if strings.Contains(g.By, "AC0123") {
			t.Errorf("%s: the Account SID is printed: %s", g.Blocks, g.By)
		}
	}
	want := []string{"http: billing,invoices", "mailgun: mail,mail_bulk", "twilio: sms,sms_alerts"}
	if diff := cmp.Diff(want, groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	// Without credentials only what the text says is compared.
	if got := cfg.SharedAccounts(nil); len(got) != 1 || got[0].Kind != "http" {
		t.Errorf("without credentials: %+v; want the record_namespace group alone", got)
	}
}

// TestRecordNamespaceKey: record_namespace is an http or postgres block's
// key, in the form of a block name.
func TestRecordNamespaceKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, block, want string
	}{
		{desc: "on a twilio block", block: "kind = \"twilio\"\naccount_sid_env = \"S\"\nauth_token_env = \"T\"\nrecord_namespace = \"x\"",
			want: "providers.p.record_namespace: only http and postgres blocks name one"},
		{desc: "not a name", block: "kind = \"http\"\nurl = \"https://a.example/l\"\nrecord_namespace = \"erp:1\"",
			want: "providers.p.record_namespace: must be 1-64 letters"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse(minimal+"\n[providers.p]\n"+tc.block+"\n", kinds, env(map[string]string{"S": "AC1", "T": "t"}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want %q", err, tc.want)
			}
		})
	}
}
