package settle

import (
	"context"
	"errors"
	"fmt"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// ErrOperationChanged: the operation's row changed between its lookup and
// the write (a workflow rewrote it): the answer is for what it was, so the
// operation is looked up again rather than settled on it.
var ErrOperationChanged = errors.New("the operation changed during its lookup; looking it up again")

// Final is one operation whose lookup has ended, to decide on and write.
type Final struct {
	Op   ledger.Operation
	Step Step
	// History lists the failed attempts, the final step's included.
	History []proof.AttemptError
}

// Settled says what happened to one operation.
type Settled struct {
	// Op is the row decided on: the one given, or — when the database
	// refused a done because another operation took the record meanwhile —
	// the row as it was read again.
	Op       ledger.Operation
	Decision proof.Decision
	Applied  review.Applied
	// Changed: the row changed during its lookup ([ErrOperationChanged]).
	// Nothing was decided; Op is the row as it now is, to look up again.
	Changed bool
}

// FinishBatch decides on each final step by the one settle rule
// ([proof.ProveBatch]) and writes the decisions in tx
// ([review.Store.ApplyBatch]), returning what happened to each, in order.
// A done the database refused — another operation took the record
// meanwhile, or one of the batch did — is decided again, once, on the row
// as it now is: settled by someone else if it is no longer pending,
// Changed if it was rewritten. An answer the database cannot store becomes
// a lookup_failed ticket saying so. The caller commits tx, then logs each
// outcome ([Settler.LogSettled]).
func (s *Settler) FinishBatch(ctx context.Context, tx review.TxBeginner, finals []Final) ([]Settled, error) {
	out := make([]Settled, len(finals))
	type item struct {
		i int
		Final
	}
	todo := make([]item, len(finals))
	for i, f := range finals {
		todo[i] = item{i, f}
	}
	reviews := review.NewStore(tx, s.table(), s.policy())
	for pass := 0; len(todo) > 0; pass++ {
		var live []item
		for _, it := range todo {
			if !lookedUpAs(it.Op, it.Step) {
				out[it.i] = Settled{Op: it.Op, Changed: true}
				continue
			}
			live = append(live, it)
		}
		if len(live) == 0 {
			break
		}
		proofs := make([]proof.Case, len(live))
		for j, it := range live {
			proofs[j] = proof.Case{Op: it.Op, Outcome: it.Step.Outcome}
		}
		decisions, err := proof.ProveBatch(ctx, s.table().Store(tx), proofs)
		if err != nil {
			return nil, err
		}
		now := s.Now()
		items := make([]review.Item, len(live))
		for j, it := range live {
			items[j] = review.Item{Op: it.Op, Decision: decisions[j], Now: now, Evidence: proof.NewEvidence(it.Op, proof.LookupReport{
				Adapter: it.Step.Adapter, Query: it.Step.Query, Outcome: it.Step.Outcome, Errors: it.History, At: now,
			}, decisions[j])}
		}
		results, err := reviews.ApplyBatch(ctx, items)
		if err != nil {
			return nil, err
		}
		var again, refused []item
		for j, it := range live {
			r := results[j]
			out[it.i] = Settled{Op: it.Op, Decision: decisions[j], Applied: r.Applied}
			switch {
			case r.Err != nil && it.Step.Outcome.Searched() && review.Unstorable(r.Err):
				// The answer itself cannot be written (the adapter let
				// through what the database refuses): retrying would fail
				// forever, so a ticket says why, without the records.
				it.Step = Unstorable(it.Step, r.Err)
				again = append(again, it)
			case r.Err != nil:
				return nil, fmt.Errorf("lookup of %s: %w", LogKey(it.Op), r.Err)
			case decisions[j].Done && !r.Applied.Settled && pass == 0:
				refused = append(refused, it)
			}
		}
		ids := make([]int64, len(refused))
		for j, it := range refused {
			ids[j] = it.Op.ID
		}
		current, err := rows(ctx, s.table().Store(tx), ids)
		if err != nil {
			return nil, err
		}
		for _, it := range refused {
			if op, ok := current[it.Op.ID]; ok && op.Status == ledger.StatusPending {
				it.Op = op
				again = append(again, it)
			} // else confirmed by its workflow or settled meanwhile: as written
		}
		todo = again
	}
	return out, nil
}

// lookedUpAs reports whether step was made for op as it is now. A step
// refused before any ask carries no query and was made for no row in
// particular.
func lookedUpAs(op ledger.Operation, step Step) bool {
	q := step.Outcome.Query()
	return q.OpKey == "" || proof.LookedUpAs(op, q)
}

// rows returns the current rows of ids, by id; a deleted row is missing.
func rows(ctx context.Context, store *ledger.Store, ids []int64) (map[int64]ledger.Operation, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := store.GetByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]ledger.Operation, len(found))
	for _, op := range found {
		byID[op.ID] = op
	}
	return byID, nil
}

// Finish is [Settler.FinishBatch] for one operation, in a transaction of
// its own, logged once committed. An operation whose row changed since its
// lookup is ErrOperationChanged. history lists the failed attempts, the
// final step's included.
func (s *Settler) Finish(ctx context.Context, op ledger.Operation, step Step, history []proof.AttemptError) (Settled, error) {
	tx, err := s.DB.Begin(ctx)
	if err != nil {
		return Settled{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	out, err := s.FinishBatch(ctx, tx, []Final{{Op: op, Step: step, History: history}})
	if err != nil {
		return Settled{}, err
	}
	if out[0].Changed {
		return Settled{}, ErrOperationChanged
	}
	if err := tx.Commit(ctx); err != nil {
		return Settled{}, err
	}
	s.LogSettled(out[0])
	return out[0], nil
}

// LogSettled logs what happened to one operation, once written, and
// counts it.
func (s *Settler) LogSettled(r Settled) {
	op, d := r.Op, r.Decision
	logger := s.Logger.With("op_key", LogKey(op), "provider", op.Provider)
	switch {
	case !r.Applied.Settled:
		logger.Info("operation no longer pending; nothing to do")
	case d.Done:
		s.Metrics.Settled(providerLabel(s.Providers, op.Provider), metrics.OutcomeDone)
		logger.Info("operation done", "provider_record_id", d.ProviderRecordID)
	default:
		s.Metrics.Settled(providerLabel(s.Providers, op.Provider), metrics.OutcomeReview)
		s.Metrics.TicketOpened(string(d.Reason))
		logger.Info("review ticket opened", "ticket_id", r.Applied.TicketID, "reason", d.Reason)
	}
}
