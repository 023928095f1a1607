package slack_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// countingDispatcher is the bundle's dispatcher counting into a registry
// of its own.
func (b *bundle) countingDispatcher(t *testing.T) (*notify.Dispatcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.dispatcher(t, "d1", func(c *slack.Config) { c.Metrics = m }), reg
}

// slackCounts is every Slack counter's non-zero series, by metric.
func slackCounts(t *testing.T, reg *prometheus.Registry) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	for _, name := range []string{"sweeper_slack_posts_total", "sweeper_slack_parked_total", "sweeper_slack_uncertain_total", "sweeper_slack_adopted_total"} {
		if v := metricstest.NonZero(t, reg, name); len(v) > 0 {
			out[name] = v
		}
	}
	return out
}

func TestDispatchMetrics(t *testing.T) {
	t.Run("root, then a reply that edits the root", func(t *testing.T) {
		b := setup(t)
		d, reg := b.countingDispatcher(t)
		id := b.openTicket(t, "billing")
		b.drain(t, d)
		if diff := cmp.Diff(map[string]map[string]float64{
			"sweeper_slack_posts_total": {"kind=root": 1},
		}, slackCounts(t, reg)); diff != "" {
			t.Errorf("after the root (-want +got):\n%s", diff)
		}
		b.event(t, id, review.EventEscalated, "escalated:1")
		b.drain(t, d)
		b.drain(t, d) // nothing left: nothing counted
		if diff := cmp.Diff(map[string]map[string]float64{
			"sweeper_slack_posts_total": {"kind=root": 1, "kind=reply": 1, "kind=update": 1},
		}, slackCounts(t, reg)); diff != "" {
			t.Errorf("after the reply (-want +got):\n%s", diff)
		}
	})

	t.Run("a permanent error parks the row", func(t *testing.T) {
		b := setup(t)
		d, reg := b.countingDispatcher(t)
		b.openTicket(t, "onboarding")
		b.fake.Always("chat.postMessage", slackfake.Fault{Error: "channel_not_found"})
		b.drain(t, d)
		b.drain(t, d) // parked rows are not claimed again
		if diff := cmp.Diff(map[string]map[string]float64{
			"sweeper_slack_parked_total": {"receiver=slack": 1},
		}, slackCounts(t, reg)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("a lost answer is uncertain, then the message is adopted", func(t *testing.T) {
		b := setup(t)
		d, reg := b.countingDispatcher(t)
		b.openTicket(t, "onboarding")
		b.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
		if _, err := d.DispatchOnce(b.ctx); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]map[string]float64{
			"sweeper_slack_uncertain_total": {"": 1},
		}, slackCounts(t, reg)); diff != "" {
			t.Errorf("after the drop (-want +got):\n%s", diff)
		}
		b.drain(t, d)
		// Slack took the post, but no call succeeded as far as sweeper
		// knows: it counts no post, and the adoption.
		if diff := cmp.Diff(map[string]map[string]float64{
			"sweeper_slack_uncertain_total": {"": 1},
			"sweeper_slack_adopted_total":   {"": 1},
		}, slackCounts(t, reg)); diff != "" {
			t.Errorf("after the search (-want +got):\n%s", diff)
		}
	})

	t.Run("a server error after posting is uncertain, then adopted", func(t *testing.T) {
		b := setup(t)
		d, reg := b.countingDispatcher(t)
		b.openTicket(t, "onboarding")
		b.fake.Inject("chat.postMessage", slackfake.Fault{Status: 500, Apply: true})
		b.drain(t, d)
		b.drain(t, d)
		if diff := cmp.Diff(map[string]map[string]float64{
			"sweeper_slack_uncertain_total": {"": 1},
			"sweeper_slack_adopted_total":   {"": 1},
		}, slackCounts(t, reg)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if got := len(b.fake.Messages()); got != 1 {
			t.Errorf("%d messages in Slack, want 1", got)
		}
	})
}
