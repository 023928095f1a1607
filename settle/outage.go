package settle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// MaxOutageStep is how many operations one transaction of [Outages.End]
// moves at most: a larger backlog is moved by several, one after the
// other, in one run.
const MaxOutageStep = 10_000

// outagePage is how many rows one read of the backlog returns.
const outagePage = 1_000

// Outages ends, for people, the outages that last too long: once a
// provider has been down for the cluster for its max_outage
// ([providers.Provider.MaxOutage]), its waiting operations — the stale
// pending ones, those a lookup job holds and paces included — move to
// review as lookup_failed tickets, without asking the provider. The
// sweep runs it before it scans. When the provider answers again, its
// open lookup_failed tickets are looked up again and settle by themselves
// (proof.Reason.Relooks).
type Outages struct {
	DB        review.TxBeginner
	Providers map[string]*providers.Provider
	// Policy opens the tickets, as the lookups' do, unless Live is set.
	Policy review.Policy
	// Live, when set, is read for the policy at each step instead of
	// Policy: a configuration reload changes it.
	Live   *Policies
	Logger *slog.Logger
	Now    func() time.Time
	// Metrics counts the operations moved and their tickets; nil counts
	// none.
	Metrics *metrics.Metrics
	// ledger is the table the operations live in: [NewOutages]'.
	ledger *ledger.Table
}

// NewOutages returns o moving the operations of table t. t is required
// ([ledger.Native] for sweeper's own table): there is no default, and nil
// panics.
func NewOutages(t *ledger.Table, o Outages) *Outages {
	o.ledger = required("settle.NewOutages", t)
	return &o
}

// Outage is what [Outages.End] did for one provider.
type Outage struct {
	Provider string
	// Since is when the provider went down; Down how long it had been down
	// when its operations moved.
	Since time.Time
	Down  time.Duration
	// Moved is how many operations moved to review.
	Moved int
}

// End moves the waiting operations of every provider down for longer than
// its max_outage to review, and returns what it moved, by provider. For
// each provider, one transaction holds one step: the provider's health row
// is locked (a probe bringing it up meanwhile waits for the step, then
// finds the operations in review, and its recovery looks their tickets up
// again), its stale pending operations are read, and they move to review
// in the writes a lookup job's decisions use — one compare-and-set update
// of the ledger from pending, one insert of tickets, one of their
// "opened" events (whose trigger queues one alert each: grouped per
// provider and reason, they make one Slack message), and the count on the
// provider's open incident. An operation a lookup settled or moved first
// is left as it is, and the lookup that finds its operation moved writes
// nothing: the compare-and-set admits one writer.
func (o *Outages) End(ctx context.Context) ([]Outage, error) {
	names := make([]string, 0, len(o.Providers))
	for name, p := range o.Providers {
		if lim := p.Limits(); lim.MaxOutage > 0 && lim.OutageAfter > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []Outage
	var errs []error
	for _, name := range names {
		total := Outage{Provider: name}
		for {
			step, err := o.step(ctx, o.Providers[name])
			if err != nil {
				errs = append(errs, fmt.Errorf("max_outage of %s: %w", name, err))
				break
			}
			total.Since, total.Down, total.Moved = step.Since, step.Down, total.Moved+step.Moved
			if !step.more {
				break
			}
		}
		if total.Moved > 0 {
			out = append(out, total)
			o.Logger.Warn("provider down longer than max_outage: its waiting operations moved to review",
				"provider", name, "down_for", total.Down.Round(time.Second), "since", total.Since, "moved", total.Moved)
		}
	}
	return out, errors.Join(errs...)
}

// outageStep is one transaction's work; more says a full step was moved,
// and the backlog may hold more.
type outageStep struct {
	Outage
	more bool
}

func (o *Outages) step(ctx context.Context, p *providers.Provider) (outageStep, error) {
	tx, err := o.DB.Begin(ctx)
	if err != nil {
		return outageStep{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	// One step keeps to one configuration.
	lim := p.Limits()
	if lim.MaxOutage <= 0 {
		return outageStep{}, nil // turned off by a reload since End listed it
	}
	st, down, err := health.DownPast(ctx, tx, p.Name, lim.MaxOutage)
	if err != nil || !down {
		return outageStep{}, err
	}
	// By the database's clock, as the health row's since.
	var dbNow time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		return outageStep{}, err
	}
	since, downFor := st.Since, dbNow.Sub(st.Since)

	ops, err := o.waiting(ctx, tx, p, lim.StaleAfter)
	if err != nil {
		return outageStep{}, err
	}
	step := outageStep{Outage: Outage{Provider: p.Name, Since: since, Down: downFor}, more: len(ops) == MaxOutageStep}
	if len(ops) == 0 {
		return step, nil
	}
	detail := fmt.Sprintf("provider %s was down for %s since %s, longer than its max_outage %s: not asked; "+
		"looked up again when it answers", p.Name, downFor.Round(time.Second), since.UTC().Format(time.RFC3339), lim.MaxOutage)
	if st.LastError != "" {
		detail += "; its last failure: " + st.LastError
	}
	now := o.Now()
	items := make([]review.Item, len(ops))
	for i, op := range ops {
		outcome := proof.Failed(detail)
		d := proof.Decide(op, outcome)
		items[i] = review.Item{Op: op, Decision: d, Now: now,
			Evidence: proof.NewEvidence(op, proof.LookupReport{Adapter: p.Kind, Outcome: outcome, At: now}, d)}
	}
	results, err := review.NewStore(tx, o.ledger, o.policy()).ApplyBatch(ctx, items)
	if err != nil {
		return outageStep{}, err
	}
	var moved []review.ItemResult
	for _, r := range results {
		if r.Err != nil {
			return outageStep{}, r.Err
		}
		if r.Applied.Settled {
			moved = append(moved, r)
		}
	}
	if err := outbox.NewIncidents(tx).CountMovedToReview(ctx, p.Name, len(moved), lim.MaxOutage); err != nil {
		return outageStep{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return outageStep{}, err
	}
	for range moved {
		o.Metrics.Settled(p.Name, metrics.OutcomeReview)
		o.Metrics.TicketOpened(string(proof.ReasonLookupFailed))
	}
	step.Moved = len(moved)
	return step, nil
}

// waiting reads up to MaxOutageStep of p's stale pending operations, oldest
// first (pending longer than staleAfter), in tx.
func (o *Outages) waiting(ctx context.Context, tx pgx.Tx, p *providers.Provider, staleAfter time.Duration) ([]ledger.Operation, error) {
	store := o.ledger.Store(tx)
	cutoff := o.Now().Add(-staleAfter)
	var ops []ledger.Operation
	var cursor ledger.StaleCursor
	for len(ops) < MaxOutageStep {
		page, err := store.StalePending(ctx, p.Name, cutoff, cursor, min(outagePage, MaxOutageStep-len(ops)))
		if err != nil {
			return nil, err
		}
		ops = append(ops, page...)
		if len(page) < outagePage {
			break
		}
		last := page[len(page)-1]
		cursor = ledger.StaleCursor{FirstAttemptAt: last.FirstAttemptAt, ID: last.ID}
	}
	return ops, nil
}

// policy is the review policy now: Live's, else Policy.
func (o *Outages) policy() review.Policy {
	if o.Live != nil {
		return o.Live.Review()
	}
	return o.Policy
}
