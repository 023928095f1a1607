package settle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/time/rate"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// AuditPolicy is a provider's audit, from its block (audit = true).
type AuditPolicy struct {
	// After is how long after an operation settled it is looked up once
	// more: long enough for a late duplicate to appear and for the
	// provider's search to list it.
	After time.Duration
	// Lookback is how far back settled operations are audited; older ones
	// are left alone (the provider may have purged their records).
	Lookback time.Duration
	// Rate is the most audit requests a second this process sends the
	// provider; every one also takes its turn in the provider's own rate
	// limit, shared with the lookups.
	Rate float64
}

// AuditPass is how much one audit pass of a provider may ask: its Rate
// times this, in requests.
const AuditPass = time.Minute

// MaxAuditOps is the most operations one audit pass of a provider takes.
const MaxAuditOps = 500

// auditRetryFirst and auditRetryMax bound the wait before an operation
// whose audit could not ask the provider is asked again: the re-lookup
// schedule's default (review.relookup_after, review.relookup_max).
const (
	auditRetryFirst = time.Minute
	auditRetryMax   = time.Hour
)

// Auditor looks settled operations (done, failed) up once more, after a
// delay, and turns what it finds into tickets ([proof.Audit]): never acting
// and never writing the ledger. Each operation is audited once across
// replicas and restarts: its row in sweeper.audits, which the Auditor
// alone writes, is its claim and then its outcome. The River audit job and
// its tests share it.
type Auditor struct {
	// DB reads the ledger and sweeper.audits and takes the transactions.
	DB        review.TxBeginner
	Reviews   *review.Store
	Providers map[string]*providers.Provider
	// Policies are the audited providers' policies; a provider without one
	// is not audited.
	Policies map[string]AuditPolicy
	Logger   *slog.Logger
	Now      func() time.Time
	Metrics  *metrics.Metrics
	// Behind is how long past stale a pending operation may wait for its
	// lookup before its provider's lookups count as behind and the
	// provider's audit waits for them (pending first): the wait for the
	// sweep that finds it, and its lookup. Operations stale for less only
	// wait for the next sweep, which every provider with traffic always
	// has some of. Asked at each pass (the sweep's schedule may be
	// reloaded); nil: any stale pending operation defers the audit.
	Behind func() time.Duration

	ledger   *ledger.Table
	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// NewAuditor returns a, auditing the operations of table t (required: there
// is no default, and nil panics).
func NewAuditor(t *ledger.Table, a *Auditor) *Auditor {
	a.ledger = required("settle.NewAuditor", t)
	return a
}

// AuditReport says what one pass of [Auditor.Audit] did for a provider.
type AuditReport struct {
	// Deferred: the provider's lookups are behind (stale pending
	// operations waiting past the Auditor's Behind), and pending
	// operations come first; nothing was asked.
	Deferred bool
	// Audited counts the operations whose audit ended (clean or a ticket).
	Audited int
	// Findings counts the tickets opened (or found open) by reason.
	Findings map[proof.Reason]int
	// Retry counts the operations left for a later pass: the provider could
	// not be asked, or did not answer.
	Retry int
}

// Audit takes one pass for provider: the claims due again first, then
// operations settled between Lookback and After ago, after the latest one
// claimed, up to what its Rate allows in an [AuditPass]. It asks nothing
// while the provider's lookups are behind — stale pending operations
// waiting longer than [Auditor.Behind] past stale: pending lookups come
// first.
func (a *Auditor) Audit(ctx context.Context, provider string) (AuditReport, error) {
	report := AuditReport{Findings: map[proof.Reason]int{}}
	pol, ok := a.Policies[provider]
	p := a.Providers[provider]
	if !ok || p == nil {
		return report, nil
	}
	store := a.ledger.Store(a.DB)
	now := a.Now()
	var grace time.Duration
	if a.Behind != nil {
		grace = a.Behind()
	}
	behind, err := store.CountStalePending(ctx, provider, now.Add(-p.Limits().StaleAfter-grace))
	if err != nil {
		return report, err
	}
	if behind > 0 {
		report.Deferred = true
		return report, nil
	}
	limit := min(MaxAuditOps, max(1, int(pol.Rate*AuditPass.Seconds()))*max(1, p.MaxBatch()))
	ids, err := reclaimAudits(ctx, a.DB, provider, limit)
	if err != nil {
		return report, err
	}
	ops, err := store.GetByIDs(ctx, ids)
	if err != nil {
		return report, err
	}
	if n := limit - len(ops); n > 0 {
		fresh, err := a.claimSettled(ctx, store, provider, pol, now, n)
		if err != nil {
			return report, err
		}
		ops = append(ops, fresh...)
	}
	if len(ops) == 0 {
		return report, nil
	}
	return a.audit(ctx, p, pol, ops, report)
}

// claimSettled claims up to n operations of provider settled in the
// policy's window after the latest one claimed, and returns them.
func (a *Auditor) claimSettled(ctx context.Context, store *ledger.Store, provider string, pol AuditPolicy, now time.Time, n int) ([]ledger.Operation, error) {
	cursor, err := auditCursor(ctx, a.DB, provider)
	if err != nil {
		return nil, err
	}
	ops, err := store.Settled(ctx, provider, now.Add(-pol.Lookback), now.Add(-pol.After), cursor, n)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	claimed, err := claimAudits(ctx, a.DB, provider, ops)
	if err != nil {
		return nil, err
	}
	out := ops[:0]
	for _, op := range ops {
		if claimed[op.ID] {
			out = append(out, op)
		}
	}
	return out, nil
}

// audit asks the provider about ops, in requests of its batch size paced
// by the policy's rate, and writes each outcome.
func (a *Auditor) audit(ctx context.Context, p *providers.Provider, pol AuditPolicy, ops []ledger.Operation, report AuditReport) (AuditReport, error) {
	var (
		queries []providers.Query
		asked   []ledger.Operation
		clean   []auditOutcome
	)
	now := a.Now()
	for _, op := range ops {
		if problem := auditable(op, p, now); problem != "" {
			// Nothing to ask: the audit of this row ends here, found clean.
			clean = append(clean, auditOutcome{id: op.ID, state: auditClean})
			continue
		}
		asked = append(asked, op)
		queries = append(queries, proof.SearchFor(op, p.Matching(), now))
	}
	limiter := a.limiter(p.Name, pol.Rate)
	size := max(1, p.MaxBatch())
	var items []review.Item
	var found []auditOutcome
	var retry []int64
	for start := 0; start < len(queries); start += size {
		end := min(start+size, len(queries))
		if err := limiter.Wait(ctx); err != nil {
			for _, op := range asked[start:] {
				retry = append(retry, op.ID)
			}
			break
		}
		answers := p.LookupMany(ctx, queries[start:end])
		for j, ans := range answers {
			op, q := asked[start+j], queries[start+j]
			if ans.Err != nil {
				retry = append(retry, op.ID)
				continue
			}
			f, ev, err := a.find(ctx, p, op, q, ans.Records)
			if err != nil {
				return report, err
			}
			if f.Reason == "" {
				clean = append(clean, auditOutcome{id: op.ID, state: auditClean, records: len(ans.Records)})
				continue
			}
			items = append(items, review.Item{Op: op, Decision: proof.Decision{Reason: f.Reason, Detail: f.Detail, RecordIDs: f.RecordIDs},
				Evidence: ev, Now: a.Now()})
			found = append(found, auditOutcome{id: op.ID, state: string(f.Reason), records: len(ans.Records)})
		}
	}
	// Written without a context that may have ended: what was asked is
	// not asked twice.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := finishAudits(wctx, a.DB, clean); err != nil {
		return report, err
	}
	if len(items) > 0 {
		_, err := a.Reviews.OpenAudit(wctx, items, func(ctx context.Context, tx pgx.Tx, ticketIDs []int64) error {
			for i := range found {
				found[i].ticketID = ticketIDs[i]
			}
			return finishAudits(ctx, tx, found)
		})
		if err != nil {
			return report, err
		}
	}
	if err := retryAudits(wctx, a.DB, retry, auditRetryFirst, auditRetryMax); err != nil {
		return report, err
	}
	findings := map[string]int{}
	for _, f := range found {
		report.Findings[proof.Reason(f.state)]++
		findings[f.state]++
		a.Logger.Warn("audit found an effect the ledger does not show", "provider", p.Name, "reason", f.state, "ticket_id", f.ticketID)
	}
	report.Audited, report.Retry = len(clean)+len(found), len(retry)
	a.Metrics.Audited(p.Name, report.Audited, findings)
	if ctx.Err() != nil && len(retry) > 0 {
		return report, ctx.Err()
	}
	return report, nil
}

// find applies the audit's rule to op's answer: who else holds the
// records, then [proof.Audit]; for a finding, the evidence.
func (a *Auditor) find(ctx context.Context, p *providers.Provider, op ledger.Operation, q providers.Query, records []providers.Record) (proof.Finding, proof.Evidence, error) {
	held := map[string]string{}
	if len(records) > 0 {
		ids := make([]string, len(records))
		for i, r := range records {
			ids[i] = r.ID
		}
		holders, err := a.ledger.Store(a.DB).HoldersOf(ctx, op.Provider, ids)
		if err != nil {
			return proof.Finding{}, proof.Evidence{}, err
		}
		for _, h := range holders {
			if h.OperationID != op.ID {
				held[h.RecordID] = h.OpKey
			}
		}
	}
	f := proof.Audit(op, q, records, held)
	if f.Reason == "" {
		return f, proof.Evidence{}, nil
	}
	ev := proof.NewEvidence(op, proof.LookupReport{Adapter: p.Kind, Query: &q, Outcome: proof.Answered(q, records), At: a.Now()},
		proof.Decision{Reason: f.Reason, Detail: f.Detail, RecordIDs: f.RecordIDs})
	ev.LedgerStatus, ev.LedgerRecordID = op.Status, op.ProviderRecordID
	return f, ev, nil
}

// auditable returns why op cannot be looked up once more, or "".
func auditable(op ledger.Operation, p *providers.Provider, now time.Time) string {
	switch {
	case op.Invalid != "":
		return op.Invalid
	case proof.Lookable(op) != "":
		return proof.Lookable(op)
	case op.FirstAttemptAt.IsZero() || op.FirstAttemptAt.After(now.Add(ledger.MaxClockSkew)):
		return "no first attempt to draw a window from"
	case !p.Matching().ByKey && op.Recipient == "":
		return "no recipient to match by resemblance"
	}
	return ""
}

// limiter is provider's audit rate limiter in this process, made once.
func (a *Auditor) limiter(provider string, perSec float64) *rate.Limiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.limiters == nil {
		a.limiters = map[string]*rate.Limiter{}
	}
	l := a.limiters[provider]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(perSec), 1)
		a.limiters[provider] = l
	} else if l.Limit() != rate.Limit(perSec) {
		l.SetLimit(rate.Limit(perSec))
	}
	return l
}

// ErrNoAudit: no provider is audited.
var ErrNoAudit = errors.New("no provider has audit = true")

// AuditAll takes one pass for every audited provider, one after the other,
// and returns their reports by provider; the providers' errors are joined.
func (a *Auditor) AuditAll(ctx context.Context) (map[string]AuditReport, error) {
	if len(a.Policies) == 0 {
		return nil, ErrNoAudit
	}
	out := map[string]AuditReport{}
	var errs []error
	for name := range a.Policies {
		r, err := a.Audit(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			errs = append(errs, fmt.Errorf("audit %s: %w", name, err))
		}
		out[name] = r
	}
	return out, errors.Join(errs...)
}
