package sim_test

import (
	"strings"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/sim"
)

// globQuote is a glob matching s alone.
var globQuote = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)

func TestBatchConformance(t *testing.T) {
	providertest.RunBatch(t, providertest.BatchHarness{
		New: func(t *testing.T, w providertest.World) providers.BatchLookup {
			held := map[string]int{}
			var keys []string
			for _, h := range w.Holdings {
				if held[h.OpKey] == 0 {
					keys = append(keys, h.OpKey)
				}
				held[h.OpKey]++
			}
			cfg := &sim.Config{}
			for _, k := range w.Failing {
				cfg.Rules = append(cfg.Rules, sim.Rule{Match: globQuote.Replace(k), Outcome: sim.OutcomeError})
			}
			for _, k := range keys {
				outcome := sim.OutcomeFound
				if held[k] > 1 {
					outcome = sim.OutcomeMany
				}
				cfg.Rules = append(cfg.Rules, sim.Rule{Match: globQuote.Replace(k), Outcome: outcome})
			}
			return newSim(t, "kit", cfg)
		},
		FailedKeys: true,
	})
}
