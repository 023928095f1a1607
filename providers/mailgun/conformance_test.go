package mailgun_test

import (
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/mailgun"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	// The kit answers every request with the same body: the paging URL
	// names itself, so the page is read twice and the search ends there.
	next := "https://api.mailgun.net/v3/" + domain + "/events/W3sia2l0Il0"
	found := event{
		ID: "kitEvent1", Name: "accepted", At: q.FirstAttemptAt.Add(time.Second), Recipient: providertest.Recipient,
		MessageID: "20260310140001.1.KIT@" + domain, Subject: "Welcome", Vars: map[string]any{"op_key": q.OpKey},
	}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_MAILGUN_KEY", secret)
			return providertest.NewLookup(t, mailgun.Kind, "kit", env, func(c *mailgun.Config) {
				c.APIKeyEnv, c.Domain, c.APIBase = "KIT_MAILGUN_KEY", domain, baseURL
			})
		},
		Empty:   eventsPage(next),
		Found:   eventsPage(next, found),
		FoundID: found.MessageID,
		ErrorBody: func(status int) []byte {
			if status == 401 {
				return []byte("Forbidden")
			}
			return []byte(`{"message":"Invalid recipient ` + providertest.Recipient + ` for key ` + providertest.Secret + `"}`)
		},
	})
}
