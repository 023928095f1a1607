package providers

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
)

// Provider is a configured provider: its adapter behind a rate limit and a
// concurrency cap shared by every lookup of the provider in this process,
// and the timings its block sets.
type Provider struct {
	// Name is the block's name, as in the ledger's provider column.
	Name string
	// Kind is the adapter's kind.
	Kind string

	// limits are the provider's timings and share of capacity in effect,
	// replaced whole by [Provider.SetLimits]: never changed in place.
	limits atomic.Pointer[Limits]

	adapter  Lookup
	matching Matching
	health   Health
	// refused are the operations the provider refused with a 429 since
	// it last answered ([refusals]).
	refused refusals
	// requests counts the requests made to the adapter: one per lookup,
	// one per batch.
	requests atomic.Int64
	// waited counts the operations whose requests were paced because the
	// provider is down, since the last probe this process sent.
	waited  atomic.Int64
	limiter *rate.Limiter
	shared  SharedRate
	// slots holds one token per request in flight; a concurrency change
	// replaces it, and each request frees the slot it took where it took it.
	slots atomic.Pointer[chan struct{}]
	// sharedPaced is when (Unix nanoseconds) the cluster's rate limit,
	// as this process last found it, has a turn within lookup_timeout
	// again: until then a request is paced without asking it.
	sharedPaced atomic.Int64
	metrics     *metrics.Metrics
	tracer      trace.Tracer
	// start guards what is learnt about the provider after it is built:
	// its record namespace and whether it is ready (see namespace.go).
	start startState
}

// Limits are a provider's timings and its share of the provider's capacity.
type Limits struct {
	StaleAfter    time.Duration
	LookupTimeout time.Duration
	LookupBudget  time.Duration
	RateLimit     float64 // requests per second
	Concurrency   int     // requests in flight
	// OutageAfter is how many different operations the provider must
	// fail in a row, with no answer in between, to be down for the
	// cluster — none of them one it failed while it answered others;
	// 0: never.
	OutageAfter int
	// MaxOutage is how long the provider may be down for the cluster
	// before its waiting operations move to review; 0: never.
	MaxOutage time.Duration
	// SettleWindow is how long after an operation's first attempt an
	// empty answer proves nothing yet.
	SettleWindow time.Duration
	// InFlightFor is how long after an operation's first attempt a record
	// still in flight at the provider is waited for.
	InFlightFor time.Duration
}

// NewProvider wraps adapter with limits.
func NewProvider(name, kind string, adapter Lookup, limits Limits) *Provider {
	p := &Provider{
		Name:     name,
		Kind:     kind,
		adapter:  adapter,
		matching: matchingOf(adapter),
		limiter:  rate.NewLimiter(rate.Limit(limits.RateLimit), max(1, int(limits.RateLimit))),
	}
	p.limits.Store(&limits)
	slots := make(chan struct{}, max(1, limits.Concurrency))
	p.slots.Store(&slots)
	return p
}

// Limits are the provider's timings and share of capacity in effect now:
// one value, as a whole, however a reload changes them meanwhile. A
// decision reads them once and keeps to what it read.
func (p *Provider) Limits() Limits { return *p.limits.Load() }

// SetLimits puts l in effect from the next decision on, as a whole: the
// next sweep's stale_after, the next lookup's timeout and admission, the
// next budget decision, settle window, in-flight wait and outage check.
// Requests already admitted keep the timeout and the slot they started
// with; a concurrency change takes a new count of slots, so that for as
// long as requests admitted before it run, up to the old and the new
// counts together may be in flight. The rate limit changes as
// [Provider.SetRateLimit] says. The provider's health ([Provider.SetHealth])
// is its owner's to change. A configuration reload calls it; it is safe
// while lookups run.
func (p *Provider) SetLimits(l Limits) {
	was := p.limits.Swap(&l)
	if l.RateLimit != was.RateLimit {
		p.SetRateLimit(l.RateLimit)
	}
	if max(1, l.Concurrency) != max(1, was.Concurrency) {
		slots := make(chan struct{}, max(1, l.Concurrency))
		p.slots.Store(&slots)
	}
}

// matchingOf is what the adapter declares, by resemblance when it
// declares nothing, with the default margin filled in.
func matchingOf(adapter Lookup) Matching {
	var m Matching
	if ml, ok := adapter.(MatchingLookup); ok {
		m = ml.Matching()
	}
	if m.Margin <= 0 {
		m.Margin = DefaultMargin
	}
	return m
}

// Health is a provider's health shared by every replica: see
// health's Tracker, which implements it.
type Health interface {
	// Allow says whether a lookup may ask now; probe marks the one lookup
	// asking a provider that is down. A non-nil error means wait.
	Allow(ctx context.Context) (probe bool, wait time.Duration, err error)
	// Done reports how a lookup for operation op (its op_key) that asked
	// ended: failed for a failure that is the provider's own — a
	// transient error that is not an answer the provider gave
	// ([Unreadable], or every HTTP exchange answered), no answer in time,
	// or a 429 for an operation asked again after the wait the
	// provider's last 429 for it asked for. A 429 honoured is not
	// reported (but a probe's, a failed probe).
	Done(ctx context.Context, probe, failed bool, op, detail string) error
	// DownTotal is how long the provider has been down in all.
	DownTotal(ctx context.Context) time.Duration
}

// SetHealth has the provider's lookups pause while h says it is down
// (nil: never). Call it before the provider is used.
func (p *Provider) SetHealth(h Health) { p.health = h }

// SharedRate is a provider's rate limit shared by every replica: see
// health's Rate, which implements it.
type SharedRate interface {
	// Take takes a token for one request and says how long the request
	// must wait for its turn — unless its turn is later than within:
	// then it takes nothing, and the wait it says is longer than within.
	Take(ctx context.Context, within time.Duration) (time.Duration, error)
	// Return gives back the token of a request that was not sent.
	Return(ctx context.Context) error
}

// SetSharedRate has each request to the provider also wait for its turn in
// r, the cluster's bucket (nil: this process's rate limit alone). Call it
// before the provider is used.
func (p *Provider) SetSharedRate(r SharedRate) { p.shared = r }

// DownTotal is how long the provider has been down in all, by its health
// (zero without one): what a lookup's budget leaves out.
func (p *Provider) DownTotal(ctx context.Context) time.Duration {
	if p == nil || p.health == nil {
		return 0
	}
	return p.health.DownTotal(ctx)
}

// Close releases what the adapter holds (a connection pool), for an
// adapter that holds anything; the provider is not used after it.
func (p *Provider) Close() {
	if c, ok := p.adapter.(interface{ Close() }); ok {
		c.Close()
	}
}

// SetRateLimit makes the provider's rate limit perSec requests a second,
// in this process and, when its shared bucket can change ([SetSharedRate]
// with a limit setter), in the cluster's, from the next request on:
// requests already admitted are not called back. A configuration reload
// calls it.
func (p *Provider) SetRateLimit(perSec float64) {
	burst := max(1, int(perSec))
	p.limiter.SetLimit(rate.Limit(perSec))
	p.limiter.SetBurst(burst)
	if s, ok := p.shared.(interface{ SetLimit(float64, int) }); ok {
		s.SetLimit(perSec, burst)
	}
}

// RateLimit is the provider's rate limit, in requests per second: in this
// process, and for the cluster when it shares one ([Provider.SetSharedRate]).
func (p *Provider) RateLimit() float64 { return float64(p.limiter.Limit()) }

// Matching says how the provider's records are tied to operations.
func (p *Provider) Matching() Matching { return p.matching }

// SetMetrics has each later call to the adapter recorded in m (nil: none).
// Call it before the provider is used: it is not synchronized with Lookup.
func (p *Provider) SetMetrics(m *metrics.Metrics) { p.metrics = m }

// Lookup waits for a free slot and the rate limiter (bounded by ctx, not by
// the lookup timeout), then calls the adapter under LookupTimeout. It
// returns the adapter's records, or an error [Classify] understands: a
// lookup that does not answer in time is transient, never "not found". A
// panicking adapter, or one that returns a record without an id, is a
// transient error too. Whatever the adapter let through, the recipient is
// redacted from the error's message: it ends up in logs and evidence.
func (p *Provider) Lookup(ctx context.Context, q Query) ([]Record, error) {
	records, err := p.lookup(ctx, q)
	return records, Redact(err, q.Recipient)
}

// lookup is one request for q alone: [Provider.send] around the adapter's
// Lookup.
func (p *Provider) lookup(ctx context.Context, q Query) ([]Record, error) {
	results, err := p.send(ctx, SpanLookup, []Query{q}, Malformed, func(ctx context.Context) ([]BatchAnswer, error) {
		records, err := p.adapter.Lookup(ctx, q)
		if err != nil {
			return nil, err
		}
		return []BatchAnswer{{Records: records}}, nil
	})
	if err != nil {
		return nil, err
	}
	return results[0].Records, results[0].Err
}

// Requests reports how many requests this process has made to the
// provider: one per single lookup and one per batch, however many
// operations it held.
func (p *Provider) Requests() int64 { return p.requests.Load() }

// checkRecords refuses an answer the ledger could not store or compare
// exactly — an id outside [ledger.CheckRecordID]'s canonical form, a
// payload hash that is not one, text that is not UTF-8 or holds NUL — so
// that no answer can leave a write failing forever, and no id is trimmed
// into another operation's. A record listed twice is merged by
// [MergeDuplicates]' one rule. Being transient, a malformed answer is
// retried within the budget, then becomes a lookup_failed ticket: never
// records, never "none". It is the operation's failure, never the
// provider's ([Unreadable]).
func checkRecords(records []Record) ([]Record, error) {
	for i, r := range records {
		if err := ledger.CheckRecordID(r.ID); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if r.PayloadHash != "" {
			if err := ledger.CheckPayloadHash(r.PayloadHash); err != nil {
				return nil, fmt.Errorf("record %d: %w", i, err)
			}
		}
		if !r.State.Valid() {
			return nil, fmt.Errorf("record %d: state %q is none of %v", i, safetext.Truncate(string(r.State), 32), States)
		}
		for _, text := range []struct{ name, value string }{{"recipient", r.Recipient}, {"excerpt", r.Excerpt}, {"status", r.Status}} {
			if !utf8.ValidString(text.value) || strings.ContainsRune(text.value, 0) {
				return nil, fmt.Errorf("record %d: %s is not UTF-8 text without NUL", i, text.name)
			}
		}
	}
	return MergeDuplicates(records)
}

// lookupResult names a lookup's outcome for the metrics: how many records
// it found, or its error's class.
func lookupResult(records []Record, err error) string {
	if err != nil {
		switch class, _ := Classify(err); class {
		case ClassRateLimited:
			return metrics.LookupRateLimited
		case ClassPermanent:
			return metrics.LookupPermanent
		case ClassUnsupported:
			return metrics.LookupUnsupported
		case ClassPaced:
			return metrics.LookupTransient // not reached: a paced lookup asks nobody
		default:
			return metrics.LookupTransient
		}
	}
	switch len(records) {
	case 0:
		return metrics.LookupNotFound
	case 1:
		return metrics.LookupFound
	default:
		return metrics.LookupMultiple
	}
}
