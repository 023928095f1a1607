// Package sim is a simulated provider for tests, the demo and benchmarks.
// Its answer for an operation is chosen by the first rule whose glob matches
// the op_key; an op_key no rule matches is not found.
//
//	[providers.sim]
//	kind = "sim"
//	latency = "0s"
//	fail_for = "0s"     # every lookup a transient error (HTTP 503) for this long from the first
//	max_batch = 100     # operations answered per request (1: one each)
//	[[providers.sim.rules]]
//	match = "found-*"   # glob on op_key (path.Match syntax)
//	outcome = "found"
//	after = "0s"        # nothing found until this long after the op_key's first answered lookup
//
// fail_for plays a provider that is down when sweeper starts asking and
// then recovers; a rule's after plays a search index that lags behind the
// provider's own records. Both count from lookups, not from the adapter's
// construction, so that a slow start does not eat into them.
package sim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// Kind is the sim adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("sim", func() *Config { return &Config{} },
	func(name string, cfg *Config, _ providers.Env) (providers.Lookup, error) { return New(name, cfg), nil })

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
}

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
	// records: found, many, mismatch. Default 0s.
	After config.Duration `toml:"after"`
}

// recordOutcomes are the outcomes that return records, which a rule's
// After can hold back.
var recordOutcomes = []string{OutcomeFound, OutcomeMany, OutcomeMismatch}

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

// Sim is the simulated adapter.
type Sim struct {
	name string
	cfg  *Config

	mu       sync.Mutex
	lookups  int
	requests atomic.Int64
	// started is the first lookup's time, from which FailFor counts.
	started time.Time
	// answered is each op_key's first answered lookup, from which its
	// rule's After counts.
	answered map[string]time.Time
}

var _ providers.BatchLookup = (*Sim)(nil)

// New returns a Sim for the block named name.
func New(name string, cfg *Config) *Sim { return &Sim{name: name, cfg: cfg} }

// Lookups reports how many operations the adapter has answered for or
// refused, in single lookups and batches.
func (s *Sim) Lookups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// Requests reports how many requests the adapter has answered or refused:
// one per Lookup and one per LookupBatch, however many operations it held.
func (s *Sim) Requests() int64 { return s.requests.Load() }

// MaxBatch implements providers.BatchLookup: max_batch.
func (s *Sim) MaxBatch() int { return cmp.Or(s.cfg.MaxBatch, DefaultMaxBatch) }

// Lookup implements providers.Lookup by the first matching rule, once
// FailFor has passed and the rule's After has.
func (s *Sim) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	s.requests.Add(1)
	failing := s.count(1)
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	if failing {
		return nil, errOutage
	}
	return s.answer(ctx, q)
}

// LookupBatch implements providers.BatchLookup: each operation's answer is
// its rule's, as Lookup gives it, after one latency for the request. An
// operation whose rule is slow holds the whole request past its deadline;
// one whose rule is error or unsupported fails alone.
func (s *Sim) LookupBatch(ctx context.Context, qs []providers.Query) ([]providers.BatchAnswer, error) {
	s.requests.Add(1)
	failing := s.count(len(qs))
	if len(qs) > s.MaxBatch() {
		return nil, providers.Permanent(fmt.Errorf("sim: %d operations in one request; max_batch is %d", len(qs), s.MaxBatch()))
	}
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	if failing {
		return nil, errOutage
	}
	answers := make([]providers.BatchAnswer, len(qs))
	for i, q := range qs {
		if s.cfg.OutcomeFor(q.OpKey) == OutcomeSlow {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		answers[i].Records, answers[i].Err = s.answer(ctx, q)
	}
	return answers, nil
}

// errOutage is every answer while fail_for lasts.
var errOutage = providers.Transient(errors.New("sim: simulated provider outage (HTTP 503), as fail_for says"))

// count counts a request for n operations and reports whether fail_for,
// counted from the first request, still lasts.
func (s *Sim) count(n int) (failing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups += n
	if s.started.IsZero() {
		s.started = time.Now()
	}
	return time.Since(s.started) < s.cfg.FailFor.Duration
}

// wait is the simulated latency of one request.
func (s *Sim) wait(ctx context.Context) error {
	if d := s.cfg.Latency.Duration; d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// answer is the rule's answer for q, once the rule's After has passed.
func (s *Sim) answer(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	rule := s.cfg.ruleFor(q.OpKey)
	if after := rule.After.Duration; after > 0 && !s.heldSince(q.OpKey, after) {
		return nil, nil
	}
	created := q.Since.Add(time.Second)
	switch rule.Outcome {
	case OutcomeFound:
		return []providers.Record{s.record(q, "1", q.PayloadHash, created)}, nil
	case OutcomeMany:
		return []providers.Record{
			s.record(q, "1", q.PayloadHash, created),
			s.record(q, "2", q.PayloadHash, created.Add(time.Second)),
		}, nil
	case OutcomeMismatch:
		return []providers.Record{s.record(q, "1", otherHash(q.PayloadHash), created)}, nil
	case OutcomeError:
		return nil, providers.Transient(errors.New("sim: simulated provider error (HTTP 503)"))
	case OutcomeSlow:
		<-ctx.Done()
		return nil, ctx.Err()
	case OutcomeUnsupported:
		return nil, providers.ErrUnsupported
	}
	return nil, nil
}

// heldSince reports whether opKey's first answered lookup, this one if it
// is the first, was at least after ago.
func (s *Sim) heldSince(opKey string, after time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, seen := s.answered[opKey]
	if !seen {
		if s.answered == nil {
			s.answered = map[string]time.Time{}
		}
		first = time.Now()
		s.answered[opKey] = first
	}
	return time.Since(first) >= after
}

// record builds a record whose id is derived from the op_key, so that the
// same operation always finds the same ids.
func (s *Sim) record(q providers.Query, n, payloadHash string, created time.Time) providers.Record {
	sum := sha256.Sum256([]byte(s.name + "\x00" + q.OpKey))
	return providers.Record{
		ID:          "sim_" + hex.EncodeToString(sum[:6]) + "_" + n,
		CreatedAt:   created.UTC(),
		Recipient:   q.Recipient,
		PayloadHash: payloadHash,
		Excerpt:     "simulated " + q.Action,
	}
}

func otherHash(h string) string {
	sum := sha256.Sum256([]byte("mismatch:" + h))
	return hex.EncodeToString(sum[:])
}
