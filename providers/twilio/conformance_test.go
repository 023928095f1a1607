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
			env.Getenv = providertest.Vars("KIT_ACCOUNT_SID", secret, "KIT_AUTH_TOKEN", secret)
			return providertest.NewLookup(t, twilio.Kind, "kit", env, func(c *twilio.Config) {
				c.AccountSIDEnv, c.AuthTokenEnv, c.APIBase = "KIT_ACCOUNT_SID", "KIT_AUTH_TOKEN", baseURL
			})
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
