package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// Summary counts what one pass did.
type Summary struct {
	Scanned int `json:"scanned"`
	Done    int `json:"done"`
	// Tickets counts the tickets opened, by reason.
	Tickets map[review.Reason]int `json:"tickets"`
	// AlreadySettled counts operations someone else settled or confirmed
	// while the pass looked them up.
	AlreadySettled int `json:"already_settled"`
	// Errors counts operations the pass could not settle (database errors);
	// they stay pending for the next sweep.
	Errors int  `json:"errors"`
	DryRun bool `json:"dry_run"`
	// Decisions lists each decision, for --dry-run.
	Decisions []DecisionLine `json:"decisions,omitempty"`
}

// DecisionLine is one decision of a dry run.
type DecisionLine struct {
	OpKey    string          `json:"op_key"`
	Provider string          `json:"provider"`
	Decision review.Decision `json:"decision"`
}

// decisionJSON is a [review.Decision] as JSON shows it: the type itself has
// no tags, and its Go field names are no output format.
type decisionJSON struct {
	Done             bool          `json:"done"`
	ProviderRecordID string        `json:"provider_record_id,omitempty"`
	Reason           review.Reason `json:"reason,omitempty"`
	Detail           string        `json:"detail"`
	RecordIDs        []string      `json:"record_ids,omitempty"`
	DifferingFields  []string      `json:"differing_fields,omitempty"`
}

// MarshalJSON writes l with the decision's keys in snake_case, and with
// <, > and & as they are (a caller's encoder decides on escaping; an
// escape made here could not be undone there).
func (l DecisionLine) MarshalJSON() ([]byte, error) {
	d := l.Decision
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		OpKey    string       `json:"op_key"`
		Provider string       `json:"provider"`
		Decision decisionJSON `json:"decision"`
	}{l.OpKey, l.Provider, decisionJSON{
		Done: d.Done, ProviderRecordID: d.ProviderRecordID, Reason: d.Reason, Detail: d.Detail,
		RecordIDs: d.RecordIDs, DifferingFields: d.DifferingFields,
	}})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// OnceOptions tune [Sweeper.SweepOnce].
type OnceOptions struct {
	// DryRun looks up and decides, and writes nothing.
	DryRun bool
	// Concurrency is how many operations are looked up at once; default
	// river.max_workers.
	Concurrency int
}

// SweepOnce runs one full pass in this process: the scan, every lookup it
// causes (retrying within each provider's budget), every decision. It
// returns when all are settled. It writes exactly what the River jobs
// write, through the same compare-and-set, so it is safe beside a running
// daemon: whichever settles an operation first wins, the other finds
// nothing to do.
func (s *Sweeper) SweepOnce(ctx context.Context, opts OnceOptions) (Summary, error) {
	settler := s.Settler(nil)
	concurrency := opts.Concurrency
	if concurrency <= 0 {
		concurrency = s.Config.River.MaxWorkers
	}
	sum := Summary{Tickets: map[review.Reason]int{}, DryRun: opts.DryRun}
	var mu sync.Mutex
	work := make(chan ledger.Operation)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for op := range work {
				settled, err := s.settleOnce(ctx, settler, op, opts.DryRun)
				mu.Lock()
				switch {
				case err != nil:
					sum.Errors++
					s.Logger.Error("settle failed; the operation stays pending", "op_key", op.OpKey, "error", err)
				case opts.DryRun:
					sum.Decisions = append(sum.Decisions, DecisionLine{OpKey: op.OpKey, Provider: op.Provider, Decision: settled.Decision})
					countDecision(&sum, settled.Decision)
				case !settled.Applied.Settled:
					sum.AlreadySettled++
				default:
					countDecision(&sum, settled.Decision)
				}
				mu.Unlock()
			}
		})
	}
	scanned, err := s.Scanner().Scan(ctx, func(ctx context.Context, ops []ledger.Operation) error {
		for _, op := range ops {
			select {
			case work <- op:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	close(work)
	wg.Wait()
	sum.Scanned = scanned
	return sum, err
}

func countDecision(sum *Summary, d review.Decision) {
	if d.Done {
		sum.Done++
	} else {
		sum.Tickets[d.Reason]++
	}
}

// settleOnce is the lookup job's loop, in process: retry transient errors
// with backoff and wait out rate limits, within the provider's budget.
func (s *Sweeper) settleOnce(ctx context.Context, settler *Settler, op ledger.Operation, dryRun bool) (Settled, error) {
	var budget time.Duration
	if p := s.Providers[op.Provider]; p != nil {
		budget = p.LookupBudget
	}
	deadline := s.now().Add(budget)
	var history []review.AttemptError
	for attempt := 1; ; attempt++ {
		step := settler.Attempt(ctx, op)
		if step.Final {
			if step.Err != nil {
				history = append(history, review.AttemptError{At: s.now(), Attempt: attempt, Class: step.Class.String(), Error: step.Err.Error()})
			}
			return settler.Finish(ctx, op, step, history, dryRun)
		}
		if ctx.Err() != nil {
			return Settled{}, ctx.Err()
		}
		history = append(history, review.AttemptError{At: s.now(), Attempt: attempt, Class: step.Class.String(), Error: step.Err.Error()})
		wait := backoff(attempt)
		if step.Class == providers.ClassRateLimited {
			wait = max(step.RetryAfter, time.Second) // never spin on a zero delay
		}
		if s.now().Add(wait).After(deadline) {
			return settler.Finish(ctx, op, Exhausted(step, attempt, budget), history, dryRun)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return Settled{}, errors.Join(ctx.Err(), step.Err)
		}
	}
}
