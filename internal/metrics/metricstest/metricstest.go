// Package metricstest reads what a Prometheus registry holds, for tests
// that check a counter moved exactly as the events happened.
package metricstest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Values returns every series of metric name in g by its labels, written
// "k=v,k=v" in label-name order ("" for a series without labels): the value
// of a counter or gauge, the sample count of a histogram. A metric with no
// series gives an empty map.
func Values(t testing.TB, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			pairs := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				pairs = append(pairs, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			default:
				t.Fatalf("%s: unsupported metric type %s", name, f.GetType())
			}
			out[strings.Join(pairs, ",")] = v
		}
	}
	return out
}

// NonZero returns the series of Values whose value is not 0: what events
// moved, without the series registered at zero in advance.
func NonZero(t testing.TB, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for k, v := range Values(t, g, name) {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
