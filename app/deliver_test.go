package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// TestDeliverWaitsOutAShortRetryAfter: the alert a pass in the foreground
// produced goes out before Deliver returns, after a Retry-After of a
// second; a Retry-After longer than Deliver waits is not waited for, and
// the alert is counted as left in the outbox.
func TestDeliverWaitsOutAShortRetryAfter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc       string
		retryAfter string
		wantSent   int
		wantLeft   int
	}{
		{"a second's wait is waited out", "1", 1, 0},
		{"a minute's is left for the daemon", "60", 0, 1},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			fake := slackfake.New(t)
			env := func(name string) string {
				switch name {
				case config.EnvSlackToken:
					return slackfake.Token
				case config.EnvSlackSigning:
					return "slackfake-signing-secret"
				}
				return ""
			}
			cfg, err := config.Parse(baseConfig+fmt.Sprintf(`
[slack]
channel = "C0REVIEW01"
api_url = %q
`, fake.URL()), kinds, env)
			if err != nil {
				t.Fatal(err)
			}
			b := setup(t, baseConfig, nil)
			b.sweeper.Config, b.sweeper.Getenv = cfg, env
			ctx := context.Background()
			b.claim(t, "many-1", "sim", time.Hour)
			sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{})
			if err != nil || sum.Tickets["multiple_matches"] != 1 {
				t.Fatalf("sweep: %+v, %v; want one multiple_matches ticket", sum, err)
			}
			fake.Inject("chat.postMessage", slackfake.Fault{Status: 429, RetryAfter: c.retryAfter})

			start := time.Now()
			got, err := b.sweeper.Deliver(ctx)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if got.RateLimited != 1 || got.Sent != c.wantSent || got.Left != c.wantLeft {
				t.Errorf("delivery %+v; want 1 rate limited, %d sent, %d left", got, c.wantSent, c.wantLeft)
			}
			if n := len(fake.Messages()); n != c.wantSent {
				t.Errorf("%d message(s) in Slack, want %d", n, c.wantSent)
			}
			// A wait of a second or none, and the pass: well within ten
			// seconds even on a loaded machine, where a wait for the
			// whole backoff would be minutes.
			if took > 10*time.Second {
				t.Errorf("Deliver took %s: it waits a few seconds at most", took)
			}
		})
	}
}
