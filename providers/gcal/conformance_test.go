package gcal_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/gcal"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	found := ev{ID: "kit0event0001", OpKey: q.OpKey, Summary: "Intro call", Attendee: providertest.Recipient, Created: q.FirstAttemptAt.Add(time.Second)}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			// Google's token endpoint, apart from the API the kit fakes: it
			// issues the kit's secret as the access token.
			tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, secret)
			}))
			t.Cleanup(tokens.Close)
			env.Getenv = providertest.Vars("KIT_GCAL_KEY", keyJSON())
			return providertest.NewLookup(t, gcal.Kind, "kit", env, func(c *gcal.Config) {
				c.CalendarID, c.CredentialsEnv, c.APIBase, c.TokenURL = calendarID, "KIT_GCAL_KEY", baseURL, tokens.URL+"/token"
			})
		},
		Empty:   listPage(""),
		Found:   listPage("", found),
		FoundID: found.ID,
		ErrorBody: func(status int) []byte {
			return fmt.Appendf(nil, `{"error":{"errors":[{"domain":"global","reason":"backendError","message":"%s for %s"}],"code":%d,"message":"%s"}}`,
				providertest.Secret, providertest.Recipient, status, providertest.Recipient)
		},
	})
}
