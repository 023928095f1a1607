package settle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// UnconfiguredStaleAfter is how old a pending row of a provider with no
// [providers.NAME] block must be before the sweep turns it into an
// invalid_operation ticket: the default stale_after, so a provider added to
// the config a little late still gets its rows looked up.
const UnconfiguredStaleAfter = 15 * time.Minute

// Scanner walks the stale pending operations, provider by provider, in
// keyset pages. Memory is one page, whatever the backlog.
type Scanner struct {
	DB           ledger.DB
	Providers    map[string]*providers.Provider
	BatchSize    int
	QueryTimeout time.Duration
	// Admission bounds how much of a provider's backlog one pass hands on:
	// the oldest rate_limit × Admission stale operations (at least
	// BatchSize), so that the lookup queue holds about what the provider
	// can be asked in that time, however large the backlog. Zero hands on
	// everything (a pass in process, which looks each one up before it
	// returns).
	Admission time.Duration
	Now       func() time.Time
	// Metrics counts the stale operations found; nil counts none.
	Metrics *metrics.Metrics
	// ledger is the table the operations live in: [NewScanner]'s.
	ledger *ledger.Table
	// Outages, when set, moves the waiting operations of providers down
	// longer than their max_outage to review before each scan (the
	// daemon's sweep); nil moves none.
	Outages *Outages
}

// Table is the table the scanner walks.
func (s *Scanner) Table() *ledger.Table { return s.ledger }

// NewScanner returns s walking the operations of table t. t is required
// ([ledger.Native] for sweeper's own table): there is no default, and nil
// panics.
func NewScanner(t *ledger.Table, s Scanner) *Scanner {
	s.ledger = required("settle.NewScanner", t)
	return &s
}

// Scan calls page for each page of stale operations and returns how many
// it saw. A provider that is not ready ([providers.Provider.NotReady]) is
// skipped: its operations stay pending, and are not taken for an
// unconfigured provider's. An error from page or a query stops that provider's walk (all
// of it once ctx ends); the other walks still run, and the errors are
// returned together.
func (s *Scanner) Scan(ctx context.Context, page func(context.Context, []ledger.Operation) error) (int, error) {
	store := s.ledger.Store(s.DB)
	now := s.Now()
	names := make([]string, 0, len(s.Providers))
	for name := range s.Providers {
		names = append(names, name)
	}
	slices.Sort(names)

	scanned := 0
	walk := func(what, label string, limit int, next func(context.Context, ledger.StaleCursor, int) ([]ledger.Operation, error)) error {
		var cursor ledger.StaleCursor
		for handed := 0; handed < limit; {
			size := min(s.BatchSize, limit-handed)
			queryCtx, cancel := context.WithTimeout(ctx, s.QueryTimeout)
			ops, err := next(queryCtx, cursor, size)
			cancel()
			if err != nil {
				return fmt.Errorf("sweep %s: %w", what, err)
			}
			if len(ops) == 0 {
				return nil
			}
			scanned += len(ops)
			handed += len(ops)
			s.Metrics.Scanned(label, len(ops))
			if err := page(ctx, ops); err != nil {
				return err
			}
			if len(ops) < size {
				return nil
			}
			last := ops[len(ops)-1]
			cursor = ledger.StaleCursor{FirstAttemptAt: last.FirstAttemptAt, ID: last.ID}
		}
		return nil
	}
	// One provider's failing scan does not stop the others'; the errors are
	// returned together (and the job retried) once every scan has run.
	var errs []error
	if s.Outages != nil {
		// Before the scan: what it moves is not handed on.
		if _, err := s.Outages.End(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range names {
		p := s.Providers[name]
		if p.NotReady() != nil {
			// Its operations wait, pending, until it is ready: not looked
			// up, not ticketed (I3: its account is not known yet).
			continue
		}
		cutoff := now.Add(-p.Limits().StaleAfter)
		err := walk("provider "+name, name, s.admitted(p), func(ctx context.Context, c ledger.StaleCursor, n int) ([]ledger.Operation, error) {
			return store.StalePending(ctx, name, cutoff, c, n)
		})
		if err != nil {
			if ctx.Err() != nil {
				return scanned, err
			}
			errs = append(errs, err)
		}
	}
	cutoff := now.Add(-UnconfiguredStaleAfter)
	err := walk("unconfigured providers", metrics.UnconfiguredProvider, math.MaxInt, func(ctx context.Context, c ledger.StaleCursor, n int) ([]ledger.Operation, error) {
		return store.StaleOtherProviders(ctx, names, cutoff, c, n)
	})
	errs = append(errs, err)
	// Rows dated in the future (written before the ledger refused them)
	// would never age into the scans above: they are invalid operations.
	err = walk("future-dated operations", metrics.UnconfiguredProvider, math.MaxInt, func(ctx context.Context, c ledger.StaleCursor, n int) ([]ledger.Operation, error) {
		return store.FutureDated(ctx, now.Add(ledger.MaxClockSkew), c, n)
	})
	return scanned, errors.Join(append(errs, err)...)
}

// admitted is how many of p's stale operations one pass hands on: see
// [Scanner.Admission]. The oldest come first, and they are the ones
// already queued, so the queue holds about this many.
func (s *Scanner) admitted(p *providers.Provider) int {
	if s.Admission <= 0 {
		return math.MaxInt
	}
	n := p.RateLimit() * s.Admission.Seconds()
	if math.IsNaN(n) || n >= math.MaxInt32 {
		return math.MaxInt
	}
	return max(s.BatchSize, int(n))
}

// AdmissionHorizon is how much of a provider's rate limit the sweep keeps
// queued: five minutes of lookups, far more than one sweep interval, and
// bounded however large the backlog.
const AdmissionHorizon = 5 * time.Minute
