package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Kind is the sim adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("sim", newConfig, New)

// Adapter is the simulated adapter.
type Adapter struct {
	name  string
	cfg   *Config
	batch int // max_batch, defaults applied

	mu       sync.Mutex
	lookups  int
	requests atomic.Int64
	// started is the first lookup's time, from which FailFor counts.
	started time.Time
	// answered is each op_key's first answered lookup, from which its
	// rule's After counts.
	answered map[string]time.Time
}

var (
	_ providers.BatchLookup = (*Adapter)(nil)
	_ providers.Lister      = (*Adapter)(nil)
)

// Lists implements providers.Lister: a sim block always can.
func (s *Adapter) Lists() bool { return true }

// List implements providers.Lister: one record for each op_key of
// listed, dated a second before until, after FailFor has passed.
func (s *Adapter) List(ctx context.Context, since, until time.Time) ([]providers.Listed, error) {
	s.requests.Add(1)
	failing := s.count(1)
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	if failing {
		return nil, errOutage
	}
	out := make([]providers.Listed, 0, len(s.cfg.Listed))
	for _, key := range s.cfg.Listed {
		created := until.Add(-time.Second)
		if created.Before(since) {
			created = since
		}
		out = append(out, providers.Listed{OpKey: key, Record: s.record(providers.Query{OpKey: key}, 1, "", created)})
	}
	return out, nil
}

// New returns a simulated adapter for the block named name. It takes
// nothing from env and never fails.
func New(name string, cfg *Config, _ providers.Env) (*Adapter, error) {
	d := *cfg
	d.ApplyDefaults()
	return &Adapter{name: name, cfg: cfg, batch: d.MaxBatch}, nil
}

// Lookups reports how many operations the adapter has answered for or
// refused, in single lookups and batches.
func (s *Adapter) Lookups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// Requests reports how many requests the adapter has answered or refused:
// one per Lookup and one per LookupBatch, however many operations it held.
func (s *Adapter) Requests() int64 { return s.requests.Load() }

// MaxBatch implements providers.BatchLookup: max_batch.
func (s *Adapter) MaxBatch() int { return s.batch }

// Lookup implements providers.Lookup by the first matching rule, once
// FailFor has passed and the rule's After has.
func (s *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
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
func (s *Adapter) LookupBatch(ctx context.Context, qs []providers.Query) ([]providers.BatchAnswer, error) {
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
func (s *Adapter) count(n int) (failing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups += n
	if s.started.IsZero() {
		s.started = time.Now()
	}
	return time.Since(s.started) < s.cfg.FailFor.Duration
}

// wait is the simulated latency of one request.
func (s *Adapter) wait(ctx context.Context) error {
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
func (s *Adapter) answer(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	rule := s.cfg.ruleFor(q.OpKey)
	if after := rule.After.Duration; after > 0 && !s.heldSince(q.OpKey, after) {
		return nil, nil
	}
	created := q.Since.Add(time.Second)
	switch rule.Outcome {
	case OutcomeFound:
		return []providers.Record{s.record(q, 1, q.PayloadHash, created)}, nil
	case OutcomeMany:
		return []providers.Record{
			s.record(q, 1, q.PayloadHash, created),
			s.record(q, 2, q.PayloadHash, created.Add(time.Second)),
		}, nil
	case OutcomeMismatch:
		return []providers.Record{s.record(q, 1, otherHash(q.PayloadHash), created)}, nil
	case OutcomeFailed, OutcomeInFlight, OutcomeReversed:
		r := s.record(q, 1, q.PayloadHash, created)
		r.State, r.Status = simStates[rule.Outcome].state, simStates[rule.Outcome].status
		return []providers.Record{r}, nil
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

// simStates is the simulated provider's state machine: the state each
// outcome's record is in, and the provider's word for it.
var simStates = map[string]struct {
	state  providers.State
	status string
}{
	OutcomeFailed:   {providers.StateFailed, "undelivered"},
	OutcomeInFlight: {providers.StateInFlight, "scheduled"},
	OutcomeReversed: {providers.StateReversed, "refunded"},
}

// heldSince reports whether opKey's first answered lookup, this one if it
// is the first, was at least after ago.
func (s *Adapter) heldSince(opKey string, after time.Duration) bool {
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

// RecordID is the id the simulated provider named provider gives the nth
// record (1 or 2) it holds for opKey: derived from the op_key, so that the
// same operation always finds the same ids, and a workflow's confirmation
// can name one (as `sweeper demo` does for an operation done twice).
func RecordID(provider, opKey string, n int) string {
	sum := sha256.Sum256([]byte(provider + "\x00" + opKey))
	return "sim_" + hex.EncodeToString(sum[:6]) + "_" + strconv.Itoa(n)
}

// record builds the nth record of q's op_key ([RecordID]).
func (s *Adapter) record(q providers.Query, n int, payloadHash string, created time.Time) providers.Record {
	return providers.Record{
		ID:          RecordID(s.name, q.OpKey, n),
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
