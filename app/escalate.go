package app

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
)

// EscalationSummary counts what one escalation pass did.
type EscalationSummary struct {
	// Examined counts the expired tickets the scan found.
	Examined int `json:"examined"`
	// Escalated counts level steps, by the level reached.
	Escalated map[int]int `json:"escalated"`
	// Repeats counts re-alerts at the top level.
	Repeats int `json:"repeats"`
	// Exhausted counts final steps.
	Exhausted int `json:"exhausted"`
	// Held counts tickets acknowledged at the top level: no alert, the
	// deadline moved on.
	Held int `json:"held"`
	// AckTimedOut counts acknowledgements that outlived their level's ack
	// timeout: their tickets re-alerted, escalation resumed.
	AckTimedOut int `json:"ack_timed_out"`
	// ResolvedByRelookup counts tickets resolved as done because the lookup
	// found exactly one agreeing record.
	ResolvedByRelookup int `json:"resolved_by_relookup"`
	// AlreadyHandled counts tickets resolved, changed or escalated by
	// someone else meanwhile.
	AlreadyHandled int `json:"already_handled"`
	// Errors counts tickets the pass could not handle (database errors);
	// they stay due for the next pass.
	Errors int `json:"errors"`
}

// EscalateOnce runs one escalation pass in this process: the scan, and for
// every expired ticket the re-lookup and the step. Tickets that fail are
// counted in Errors and stay due; the error is the scan's. It writes exactly what
// the River jobs write, through the same compare-and-set, so it is safe
// beside a running daemon or another EscalateOnce.
func (s *App) EscalateOnce(ctx context.Context) (sum EscalationSummary, err error) {
	ctx, end := s.pass(ctx, SpanEscalateOnce)
	defer func() {
		end(err, attribute.Int("sweeper.escalate.examined", sum.Examined), attribute.Int("sweeper.escalate.errors", sum.Errors))
	}()
	escalator := s.Escalator()
	sum = EscalationSummary{Escalated: map[int]int{}}
	var mu sync.Mutex
	examined, err := inPool(ctx, s.Config.River.MaxWorkers, ticketScan(s, escalator.ScanExpired),
		func(t review.ExpiredTicket) {
			out, err := escalator.Escalate(ctx, t.ID, t.Version, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				sum.Errors++
				s.Logger.Error("escalation failed; the ticket stays due", "ticket_id", t.ID, "error", err)
				return
			}
			sum.count(out)
		})
	sum.Examined = examined
	return sum, err
}

// RelookupSummary counts what one pass of scheduled re-lookups did.
type RelookupSummary struct {
	// Due counts the open tickets whose re-lookup was due.
	Due int `json:"due"`
	// Resolved counts tickets resolved as done by the record found.
	Resolved int `json:"resolved"`
	// Relooked counts tickets looked up again without a proof; their next
	// re-lookup is scheduled.
	Relooked int `json:"relooked"`
	// AlreadyHandled counts tickets someone else handled meanwhile.
	AlreadyHandled int `json:"already_handled"`
	// Errors counts tickets the pass could not handle; they stay due.
	Errors int `json:"errors"`
}

// RelookupOnce runs one pass of the scheduled re-lookups in this process:
// every open not_found or lookup_failed ticket whose re-lookup is due is
// looked up again, as the River jobs do, through the same compare-and-set.
func (s *App) RelookupOnce(ctx context.Context) (sum RelookupSummary, err error) {
	ctx, end := s.pass(ctx, SpanRelookupOnce)
	defer func() {
		end(err, attribute.Int("sweeper.relookup.due", sum.Due), attribute.Int("sweeper.relookup.resolved", sum.Resolved),
			attribute.Int("sweeper.relookup.errors", sum.Errors))
	}()
	escalator := s.Escalator()
	var mu sync.Mutex
	due, err := inPool(ctx, s.Config.River.MaxWorkers, ticketScan(s, escalator.ScanDueRelookups),
		func(t review.DueRelookup) {
			out, err := escalator.Relookup(ctx, t.ID, t.Relookups, nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				sum.Errors++
				s.Logger.Error("re-lookup failed; the ticket stays due", "ticket_id", t.ID, "error", err)
			case out.Kind == settle.OutcomeResolved:
				sum.Resolved++
			case out.Kind == settle.OutcomeRelooked:
				sum.Relooked++
			default:
				sum.AlreadyHandled++
			}
		})
	sum.Due = due
	return sum, err
}

// ticketScan is scan, one of the escalator's ticket scans, run now, in
// pages of sweep.batch_size, each query bounded by sweep.query_timeout.
func ticketScan[T any](s *App, scan func(context.Context, time.Time, int, time.Duration, func(context.Context, []T) error) (int, error)) scanFunc[T] {
	return func(ctx context.Context, page func(context.Context, []T) error) (int, error) {
		return scan(ctx, s.now(), s.Config.Sweep.BatchSize, s.Config.Sweep.QueryTimeout.Duration, page)
	}
}

func (sum *EscalationSummary) count(out settle.EscalationOutcome) {
	switch out.Kind {
	case review.EscalationLevelUp:
		sum.Escalated[out.Level]++
	case review.EscalationRepeat:
		sum.Repeats++
	case review.EscalationExhausted:
		sum.Exhausted++
	case review.EscalationHeld:
		sum.Held++
	case review.EscalationAckTimedOut:
		sum.AckTimedOut++
	case settle.OutcomeResolved:
		sum.ResolvedByRelookup++
	default:
		sum.AlreadyHandled++
	}
}
