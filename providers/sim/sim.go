// Package sim is a simulated provider for tests, the demo and benchmarks.
// Its answer for an operation is chosen by the first rule whose glob matches
// the op_key; an op_key no rule matches is not found.
//
//	[providers.sim]
//	kind = "sim"
//	latency = "0s"
//	[[providers.sim.rules]]
//	match = "found-*"   # glob on op_key (path.Match syntax)
//	outcome = "found"
package sim

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
)

// Outcomes a rule can give.
const (
	OutcomeFound       = "found"       // one record whose payload hash equals the row's
	OutcomeNotFound    = "not_found"   // a search that finds nothing
	OutcomeMany        = "many"        // two records
	OutcomeMismatch    = "mismatch"    // one record with another payload hash
	OutcomeError       = "error"       // a transient error, every time
	OutcomeSlow        = "slow"        // waits past the lookup timeout
	OutcomeUnsupported = "unsupported" // no search capability
)

// Outcomes lists every outcome, in the order documented above.
var Outcomes = []string{OutcomeFound, OutcomeNotFound, OutcomeMany, OutcomeMismatch, OutcomeError, OutcomeSlow, OutcomeUnsupported}

// Kind is the sim adapter's kind, for the explicit list in cmd/sweeper.
var Kind = providers.Kind{Name: "sim", NewSettings: func() providers.Settings { return &Config{} }}

// Config is the kind-specific part of a sim provider block.
type Config struct {
	// Latency is added to every lookup. Default 0s.
	Latency config.Duration `toml:"latency"`
	// Rules are tried in order against the op_key.
	Rules []Rule `toml:"rules"`
}

// Rule maps op_keys matching a glob to an outcome.
type Rule struct {
	// Match is a glob on the op_key, in path.Match syntax ("found-*").
	Match string `toml:"match"`
	// Outcome is one of [Outcomes].
	Outcome string `toml:"outcome"`
}

// Validate implements providers.Settings.
func (c *Config) Validate() []error {
	var errs []error
	if err := c.Latency.Err(); err != nil {
		errs = append(errs, fmt.Errorf("latency: %w", err))
	} else if c.Latency.Duration < 0 {
		errs = append(errs, errors.New("latency: must not be negative"))
	}
	for i, r := range c.Rules {
		if r.Match == "" {
			errs = append(errs, fmt.Errorf("rules[%d].match: required", i))
		} else if _, err := path.Match(r.Match, ""); err != nil {
			errs = append(errs, fmt.Errorf("rules[%d].match: invalid glob %q", i, r.Match))
		}
		if !slices.Contains(Outcomes, r.Outcome) {
			errs = append(errs, fmt.Errorf("rules[%d].outcome: must be one of %s", i, strings.Join(Outcomes, ", ")))
		}
	}
	return errs
}

// OutcomeFor returns the outcome of the first rule matching opKey, or
// not_found.
func (c *Config) OutcomeFor(opKey string) string {
	for _, r := range c.Rules {
		if ok, _ := path.Match(r.Match, opKey); ok {
			return r.Outcome
		}
	}
	return OutcomeNotFound
}
