package settle

import (
	"context"
	"sync"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// One operation's lookup goes: ask the provider ([Settler.AskMany], or
// [Settler.Attempt] for one), decide by its [Budget] what follows
// ([Budget.Next]) — ask again later, or settle — and settle
// ([Settler.FinishBatch]). The River lookup job runs the steps one job run
// at a time, carrying [Tries] in its args; `sweep --once` runs the same
// job's steps in process, sleeping where River would wait.

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
