package sendgrid_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/sendgrid"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	found := message{
		ID: "kitKitKitKitKitKitKitKw.recvd-kit-1", To: providertest.Recipient, Subject: "Welcome",
		Created: q.FirstAttemptAt.Add(time.Second), Args: map[string]string{"op_key": q.OpKey},
	}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_SENDGRID_KEY", secret)
			return providertest.NewLookup(t, sendgrid.Kind, "kit", env, func(c *sendgrid.Config) {
				c.APIKeyEnv, c.APIBase = "KIT_SENDGRID_KEY", baseURL
			})
		},
		// The kit's bodies are the search's; a message's details are
		// SendGrid's answer for the record the search lists.
		Searches: []string{"POST /v3/logs"},
		Answer: func(r *http.Request, body []byte) []byte {
			if r.Method == http.MethodGet {
				return detailBody(found)
			}
			return body
		},
		Empty:   searchBody(),
		Found:   searchBody(found),
		FoundID: found.ID,
		ErrorBody: func(status int) []byte {
			msg := "authorization required"
			if status != 401 {
				msg = http.StatusText(status) + " for " + providertest.Recipient + " with " + providertest.Secret
			}
			return []byte(`{"errors":[{"field":null,"message":"` + msg + `"}]}`)
		},
	})
}
