package twilio_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/twilio"
)

func TestConformance(t *testing.T) {
	// The kit's window ends now and starts 2h15m ago.
	created := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	// Twilio searches phone numbers: the kit's query is for one, written
	// as a ledger might hold it, and Twilio lists it in E.164.
	const recipient = "+1 (555) 010-0199"
	found := message{
		SID: "SM11111111111111111111111111111111", To: "+15550100199", From: sender,
		Body: "Your order has shipped", Created: created, Sent: created.Add(time.Second),
	}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = func(k string) string {
				if k == "KIT_ACCOUNT_SID" || k == "KIT_AUTH_TOKEN" {
					return secret
				}
				return ""
			}
			cfg := &twilio.Config{AccountSIDEnv: "KIT_ACCOUNT_SID", AuthTokenEnv: "KIT_AUTH_TOKEN", APIBase: baseURL}
			if errs := cfg.Validate(); len(errs) != 0 {
				t.Fatal(errs)
			}
			lookup, err := twilio.Kind.New("kit", cfg, env)
			if err != nil {
				t.Fatal(err)
			}
			return lookup
		},
		Empty:     listPage(providertest.Secret, nil, 0, 50, nil),
		Found:     listPage(providertest.Secret, []message{found}, 0, 50, nil),
		FoundID:   found.SID,
		Recipient: recipient,
		ErrorBody: func(status int) []byte {
			return fmt.Appendf(nil, `{"code":20003,"message":"Authenticate","more_info":"https://www.twilio.com/docs/errors/20003","status":%d}`, status)
		},
	})
}
