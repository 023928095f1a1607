package sim

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sweeper/sweeper/config"
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
	OutcomeFailed      = "failed"      // one agreeing record of an attempt the provider reports failed ("undelivered")
	OutcomeInFlight    = "in_flight"   // one agreeing record still in flight ("scheduled")
	OutcomeReversed    = "reversed"    // one agreeing record since undone ("refunded")
)

// Outcomes lists every outcome, in the order documented above.
var Outcomes = []string{OutcomeFound, OutcomeNotFound, OutcomeMany, OutcomeMismatch, OutcomeError, OutcomeSlow,
	OutcomeUnsupported, OutcomeFailed, OutcomeInFlight, OutcomeReversed}

// newConfig returns the settings a sim block is decoded over: empty,
// since max_batch's default stands for a zero too and is applied by
// [Config.ApplyDefaults].
func newConfig() *Config { return &Config{} }

// Config is the kind-specific part of a sim provider block.
type Config struct {
	// Latency is added to every lookup. Default 0s.
	Latency config.Duration `toml:"latency"`
	// FailFor makes every lookup fail with a transient error (a simulated
	// HTTP 503), whatever the rules say, until this long after the
	// adapter's first lookup: an outage that ends by itself. Default 0s:
	// never.
	FailFor config.Duration `toml:"fail_for"`

	// MaxBatch is the most operations one request answers for, 1 to
	// [MaxMaxBatch]; 1 answers one operation per request. Default
	// [DefaultMaxBatch].
	MaxBatch int `toml:"max_batch"`
	// Rules are tried in order against the op_key.
	Rules []Rule `toml:"rules"`
	// Listed are op_keys whose records the simulated provider lists when
	// asked for its records by op_key (the audit's report of records no
	// ledger row names): one record each, dated inside the window asked.
	// Default none.
	Listed []string `toml:"listed"`
	// Simulated acknowledges that the block answers from Rules, not from
	// a provider, and so settles nothing real: the configuration refuses a
	// sim block without it, so that a copied example never runs one
	// unasked. Default false.
	Simulated bool `toml:"simulated"`
}

// ApplyDefaults implements providers.Defaulter: max_batch 0 is
// [DefaultMaxBatch].
func (c *Config) ApplyDefaults() {
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
}

// Acknowledged reports whether the block says simulated = true: the
// configuration runs a sim block only then.
func (c *Config) Acknowledged() bool { return c.Simulated }

// Bounds of max_batch.
const (
	DefaultMaxBatch = 100
	MaxMaxBatch     = 1000
)

// Rule maps op_keys matching a glob to an outcome.
type Rule struct {
	// Match is a glob on the op_key, in path.Match syntax ("found-*").
	Match string `toml:"match"`
	// Outcome is one of [Outcomes].
	Outcome string `toml:"outcome"`
	// After holds the outcome back: until this long after the op_key's
	// first answered lookup, the search finds nothing (a search index that
	// lags behind the provider's records). Only for outcomes that return
	// records: found, many, mismatch, failed, in_flight, reversed. Default
	// 0s.
	After config.Duration `toml:"after"`
}

// recordOutcomes are the outcomes that return records, which a rule's
// After can hold back.
var recordOutcomes = []string{OutcomeFound, OutcomeMany, OutcomeMismatch, OutcomeFailed, OutcomeInFlight, OutcomeReversed}

// Validate implements providers.Settings.
func (c *Config) Validate() []error {
	var errs []error
	if err := c.Latency.Err(); err != nil {
		errs = append(errs, fmt.Errorf("latency: %w", err))
	} else if c.Latency.Duration < 0 {
		errs = append(errs, errors.New("latency: must not be negative"))
	}
	if err := c.FailFor.Err(); err != nil {
		errs = append(errs, fmt.Errorf("fail_for: %w", err))
	} else if c.FailFor.Duration < 0 {
		errs = append(errs, errors.New("fail_for: must not be negative"))
	}
	if c.MaxBatch < 0 || c.MaxBatch > MaxMaxBatch {
		errs = append(errs, fmt.Errorf("max_batch: must be between 1 and %d (0: the default, %d)", MaxMaxBatch, DefaultMaxBatch))
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
		switch err := r.After.Err(); {
		case err != nil:
			errs = append(errs, fmt.Errorf("rules[%d].after: %w", i, err))
		case r.After.Duration < 0:
			errs = append(errs, fmt.Errorf("rules[%d].after: must not be negative", i))
		case r.After.Duration > 0 && slices.Contains(Outcomes, r.Outcome) && !slices.Contains(recordOutcomes, r.Outcome):
			errs = append(errs, fmt.Errorf("rules[%d].after: only for an outcome that returns records (%s), not %s",
				i, strings.Join(recordOutcomes, ", "), r.Outcome))
		}
	}
	return errs
}

// OutcomeFor returns the outcome of the first rule matching opKey, or
// not_found.
func (c *Config) OutcomeFor(opKey string) string { return c.ruleFor(opKey).Outcome }

// ruleFor returns the first rule matching opKey, or a not_found one.
func (c *Config) ruleFor(opKey string) Rule {
	for _, r := range c.Rules {
		if ok, _ := path.Match(r.Match, opKey); ok {
			return r
		}
	}
	return Rule{Outcome: OutcomeNotFound}
}
