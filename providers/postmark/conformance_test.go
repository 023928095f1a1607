package postmark_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postmark"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConformance(t *testing.T) {
	q := providertest.Query()
	found := message{
		ID: "0d6f5a8e-kit0-4f1c-9a7e-2b1c3d4e5f60", To: providertest.Recipient, Subject: "Welcome",
		Received: q.FirstAttemptAt.Add(time.Second), Metadata: map[string]string{"op_key": q.OpKey},
	}
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T, baseURL, secret string, env providers.Env) providers.Lookup {
			env.Getenv = providertest.Vars("KIT_POSTMARK_TOKEN", secret)
			return providertest.NewLookup(t, postmark.Kind, "kit", env, func(c *postmark.Config) {
				c.ServerTokenEnv, c.APIBase = "KIT_POSTMARK_TOKEN", baseURL
			})
		},
		Empty:   searchPage(0),
		Found:   searchPage(1, found),
		FoundID: found.ID,
		ErrorBody: func(status int) []byte {
			if status == 401 || status == 403 {
				return []byte(`{"ErrorCode":10,"Message":"Request does not contain a valid Server token (` + providertest.Secret + `)."}`)
			}
			return fmt.Appendf(nil, `{"ErrorCode":0,"Message":"HTTP %d for %s"}`, status, providertest.Recipient)
		},
	})
}
