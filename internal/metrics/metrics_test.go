package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
)

func TestNilMetricsCountNothing(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	// None of these may panic.
	m.Scanned("sim", 3)
	m.Settled("sim", metrics.OutcomeDone)
	m.TicketOpened("not_found")
	m.ObserveLookup("sim", metrics.LookupFound, time.Millisecond)
	m.Escalated(1, "level")
	m.SlackPosted(metrics.SlackRoot)
	m.Parked("slack")
	m.Skipped("webhook", 2)
	m.Silenced("pagerduty")
	m.SlackUncertain()
	m.SlackAdopted()
}

func TestNewRegistersAndStartsKnownSeriesAtZero(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg, []string{"stripe", "sim"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		desc string
		name string
		want map[string]float64
	}{
		{"scanned", "sweeper_operations_scanned_total", map[string]float64{"provider=sim": 0, "provider=stripe": 0}},
		{"settled", "sweeper_operations_settled_total", map[string]float64{
			"outcome=done,provider=sim": 0, "outcome=review,provider=sim": 0,
			"outcome=done,provider=stripe": 0, "outcome=review,provider=stripe": 0,
		}},
		{"posts", "sweeper_slack_posts_total", map[string]float64{"kind=root": 0, "kind=reply": 0, "kind=update": 0}},
		{"parked", "sweeper_slack_parked_total", map[string]float64{"receiver=slack": 0, "receiver=pagerduty": 0, "receiver=webhook": 0}},
		{"notify parked", "sweeper_notify_parked_total", map[string]float64{"receiver=slack": 0, "receiver=pagerduty": 0, "receiver=webhook": 0}},
		{"tickets", "sweeper_tickets_opened_total", map[string]float64{}},
	} {
		if diff := cmp.Diff(c.want, metricstest.Values(t, reg, c.name)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.desc, diff)
		}
	}

	m.Scanned("sim", 3)
	m.Scanned("sim", 0) // an empty page: nothing
	m.Settled("sim", metrics.OutcomeReview)
	m.TicketOpened("not_found")
	m.Escalated(2, "repeat")
	m.ObserveLookup("sim", metrics.LookupNotFound, 7*time.Millisecond)
	m.ObserveLookup("sim", metrics.LookupNotFound, 40*time.Second) // past the last bucket: +Inf
	m.SlackPosted(metrics.SlackUpdate)
	m.SlackUncertain()
	m.SlackAdopted()
	m.Parked("pagerduty")
	m.Skipped("slack", 3)
	m.Silenced("webhook")
	m.Folded("pagerduty")
	for _, c := range []struct {
		name string
		want map[string]float64
	}{
		{"sweeper_operations_scanned_total", map[string]float64{"provider=sim": 3}},
		{"sweeper_operations_settled_total", map[string]float64{"outcome=review,provider=sim": 1}},
		{"sweeper_tickets_opened_total", map[string]float64{"reason=not_found": 1}},
		{"sweeper_escalations_total", map[string]float64{"level=2,step=repeat": 1}},
		{"sweeper_lookup_duration_seconds", map[string]float64{"provider=sim,result=not_found": 2}},
		{"sweeper_slack_posts_total", map[string]float64{"kind=update": 1}},
		{"sweeper_slack_uncertain_total", map[string]float64{"": 1}},
		{"sweeper_slack_adopted_total", map[string]float64{"": 1}},
		{"sweeper_slack_parked_total", map[string]float64{"receiver=pagerduty": 1}},
		{"sweeper_slack_skipped_total", map[string]float64{"receiver=slack": 3}},
		{"sweeper_slack_silenced_total", map[string]float64{"receiver=webhook": 1}},
		{"sweeper_slack_folded_total", map[string]float64{"": 1}},
		// The same events under their receiver-neutral names.
		{"sweeper_notify_parked_total", map[string]float64{"receiver=pagerduty": 1}},
		{"sweeper_notify_skipped_total", map[string]float64{"receiver=slack": 3}},
		{"sweeper_notify_silenced_total", map[string]float64{"receiver=webhook": 1}},
		{"sweeper_notify_folded_total", map[string]float64{"receiver=pagerduty": 1}},
	} {
		if diff := cmp.Diff(c.want, metricstest.NonZero(t, reg, c.name)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}

	// Each old name says it is deprecated and names its successor.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	help := map[string]string{}
	for _, f := range families {
		help[f.GetName()] = f.GetHelp()
	}
	for _, old := range []string{"parked", "skipped", "folded", "silenced"} {
		want := "Deprecated, removed in the next release: use sweeper_notify_" + old + "_total"
		if h := help["sweeper_slack_"+old+"_total"]; !strings.HasPrefix(h, want) {
			t.Errorf("sweeper_slack_%s_total's HELP %q; want it to start %q", old, h, want)
		}
	}

	// The names, help texts and units pass Prometheus' own lint.
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

	// A second set on the same registry is refused, with every collector named.
	if _, err := metrics.New(reg, nil); err == nil {
		t.Error("registering the metrics twice: no error")
	}
}

// TestBuildInfoSaysWhichBuildRuns: sweeper_build_info is 1 with the
// build's version, commit and Go version as labels; an unknown commit is
// "unknown", and registering twice is refused.
func TestBuildInfoSaysWhichBuildRuns(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	if err := metrics.RegisterBuildInfo(reg, metrics.Build{Version: "v1.2.3", GoVersion: "go1.26.8"}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP sweeper_build_info Always 1; its labels are the version, the commit (revision) and the Go version this process was built from.
# TYPE sweeper_build_info gauge
sweeper_build_info{goversion="go1.26.8",revision="unknown",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sweeper_build_info"); err != nil {
		t.Error(err)
	}
	if err := metrics.RegisterBuildInfo(reg, metrics.Build{Version: "v1.2.3", GoVersion: "go1.26.8"}); err == nil {
		t.Error("a second sweeper_build_info was registered")
	}
}
