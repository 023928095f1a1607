package review

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// OpenAudit opens the tickets of an audit's findings on settled operations
// — items whose Decision.Reason is an audit reason ([proof.Reason.Audit]) —
// in one transaction, with their "opened" events (and so their alerts),
// then calls inTx (nil: none) with the tickets' ids inside it, before the commit. It never
// writes the ledger: the operations stay done or failed as they are.
//
// One audit ticket per operation: an operation that already has one keeps
// it (its id is returned, and no second "opened" event is written), beside
// the ticket, if any, that settling it opened. It returns each item's
// ticket id, in order.
func (s *Store) OpenAudit(ctx context.Context, items []Item, inTx AuditTx) ([]int64, error) {
	openings := make([]opening, 0, len(items))
	for i, item := range items {
		if !item.Decision.Reason.Audit() || item.Decision.Done {
			return nil, fmt.Errorf("open audit tickets: %s: reason %q is not an audit's finding", item.Op.OpKey, item.Decision.Reason)
		}
		if !item.Op.Status.Final() {
			return nil, fmt.Errorf("open audit tickets: %s is %s, not settled", item.Op.OpKey, item.Op.Status)
		}
		o, err := s.openingFor(i, item)
		if err != nil {
			return nil, fmt.Errorf("open audit tickets: %w", err)
		}
		openings = append(openings, o)
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("open audit tickets: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if len(openings) > 0 {
		if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
			return nil, fmt.Errorf("open audit tickets: %w", err)
		}
	}
	ids, err := openTickets(ctx, tx, s.policy.Priority, openings)
	if err != nil {
		return nil, fmt.Errorf("open audit tickets: %w", err)
	}
	if inTx != nil {
		if err := inTx(ctx, tx, ids); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("open audit tickets: commit: %w", err)
	}
	return ids, nil
}

// AuditTx is what a caller of [Store.OpenAudit] writes in its transaction,
// knowing each item's ticket id, in order.
type AuditTx func(ctx context.Context, tx pgx.Tx, ticketIDs []int64) error
