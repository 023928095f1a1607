package settle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// One operation's lookup goes: ask the provider ([Settler.Attempt], or
// [Settler.AskMany] for many at once), decide by its [Budget] what follows
// ([Budget.Next]) — ask again later, or settle — and settle
// ([Settler.Finish], [Settler.FinishBatch]). The River lookup job runs the
// steps one job run at a time, carrying [Tries] in its args;
// [Settler.Settle] runs them all in the foreground.

// ErrLeftPending: a lookup in the foreground left its operation pending
// rather than wait on pacing — a provider down for the cluster, a settle
// window still open — longer than it may. Nothing was decided.
var ErrLeftPending = errors.New("left pending for a later pass")

// Settle looks op up and settles it in the foreground, waiting between
// asks as the River lookup job would between its runs, by the same
// [Budget.Next]; it returns once the lookup has ended. Unlike the job, it
// does not wait out pacing for longer than maxPaced in all: it then leaves
// the operation pending ([ErrLeftPending]). dryRun decides and writes
// nothing.
func (s *Settler) Settle(ctx context.Context, op ledger.Operation, dryRun bool, maxPaced time.Duration) (Settled, error) {
	budget := BudgetOf(ctx, s.Providers[op.Provider])
	var tries Tries
	var paced time.Duration
	for {
		asked := time.Now()
		step := s.Attempt(ctx, op)
		if !step.Final && ctx.Err() != nil {
			return Settled{}, ctx.Err() // not the provider's answer
		}
		next := budget.Next(step, &tries, asked, time.Now())
		switch next.Kind {
		case ActionSettle:
			return s.Finish(ctx, op, next.Step, tries.Errors, dryRun)
		case ActionPace:
			if paced += next.Wait; paced > maxPaced {
				return Settled{}, fmt.Errorf("%w: %w", ErrLeftPending, step.Err)
			}
		}
		select {
		case <-time.After(next.Wait):
		case <-ctx.Done():
			return Settled{}, errors.Join(ctx.Err(), step.Err)
		}
	}
}

// Ask is one operation of [Settler.AskMany]: its row, where its lookup
// stands, and what follows the ask.
type Ask struct {
	Op    ledger.Operation
	Tries *Tries
	// Next is what follows, set by AskMany.
	Next Action
}

// AskMany asks the provider about every operation of asks — all of one
// provider — at once, and sets what follows each ([Budget.Next]); an
// operation that cannot be asked about settles at once. The provider is
// asked in requests of its batch size ([providers.Provider.MaxBatch]; one
// operation each for an adapter that does not batch), sent side by side,
// each through the provider's own rate limit, concurrency cap and health,
// each answer through the checks a single lookup's gets. A cancelled ctx
// (shutdown, the job's timeout) is its error: no answer is taken then.
func (s *Settler) AskMany(ctx context.Context, asks []*Ask) error {
	var due []*Ask
	var queries []providers.Query
	var p *providers.Provider
	for _, a := range asks {
		prov, query, refused := s.Prepare(a.Op)
		if refused != nil {
			a.Next = Action{Kind: ActionSettle, Step: *refused}
			continue
		}
		p = prov
		due = append(due, a)
		queries = append(queries, query)
	}
	if len(due) == 0 {
		return nil
	}
	asked := time.Now()
	answers := lookupAll(ctx, p, queries)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	budget := BudgetOf(ctx, p)
	budget.DownTotal = sync.OnceValue(budget.DownTotal) // read once for all
	for i, a := range due {
		step := s.Answer(ctx, a.Op, p, queries[i], answers[i].Records, answers[i].Err)
		a.Next = budget.Next(step, a.Tries, asked, time.Now())
	}
	return nil
}

// lookupAll asks p about every query at once and returns the answers in
// the queries' order, in requests of p's batch size sent side by side.
func lookupAll(ctx context.Context, p *providers.Provider, queries []providers.Query) []providers.Result {
	answers := make([]providers.Result, len(queries))
	size := max(1, p.MaxBatch())
	var wg sync.WaitGroup
	for start := 0; start < len(queries); start += size {
		chunk := queries[start:min(start+size, len(queries))]
		wg.Go(func() {
			copy(answers[start:], p.LookupMany(ctx, chunk))
		})
	}
	wg.Wait()
	return answers
}

// Pending reads the rows of ids and returns those still pending, by id:
// an operation missing from it was confirmed by its workflow, settled, or
// deleted. It reads the Settler's table.
func (s *Settler) Pending(ctx context.Context, db ledger.DB, ids []int64) (map[int64]ledger.Operation, error) {
	byID, err := rows(ctx, s.table().Store(db), ids)
	if err != nil {
		return nil, err
	}
	for id, op := range byID {
		if op.Status != ledger.StatusPending {
			delete(byID, id)
		}
	}
	return byID, nil
}
