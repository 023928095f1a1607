package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
)

// Beginner starts a transaction: a pool, or a transaction (a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// pruneSQL deletes the outbox rows of up to $2 resolved tickets whose every
// row is final (sent, skipped, dismissed, folded), in no alert group, and older
// than $1 (sent, or written when never sent), the oldest resolutions
// first. A ticket's rows go together, so no reply is left without the root
// it threads under; a later event of the ticket (a contradiction) finds no
// root and is posted as a new one, as after an undelivered root. The
// table's trigger refuses any other delete.
const pruneSQL = `
	WITH doomed AS (
		SELECT t.id FROM ` + review.TicketsSQL + ` t
		WHERE t.state = 'resolved' AND t.resolved_at < $1
		  AND EXISTS (SELECT 1 FROM sweeper.outbox o WHERE o.ticket_id = t.id)
		  AND NOT EXISTS (SELECT 1 FROM sweeper.outbox o WHERE o.ticket_id = t.id
			AND (o.state NOT IN ('sent', 'skipped', 'dismissed', 'folded') OR o.group_id IS NOT NULL
			     OR coalesce(o.sent_at, o.created_at) >= $1))
		ORDER BY t.resolved_at, t.id
		LIMIT $2)
	DELETE FROM sweeper.outbox o USING doomed WHERE o.ticket_id = doomed.id`

// Prune deletes, in one transaction, the outbox rows of up to
// tickets resolved tickets that nothing reads any more: every row final
// and older than before. It returns how many rows it deleted; a caller
// loops while a pass deletes rows, each pass a short transaction. Pending
// and parked rows, the rows of open tickets, of alert groups and of
// incidents are never deleted.
func Prune(ctx context.Context, db Beginner, before time.Time, tickets int) (int64, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune the outbox: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	if _, err := tx.Exec(ctx, ledger.SweeperWriterSQL); err != nil {
		return 0, fmt.Errorf("prune the outbox: %w", err)
	}
	tag, err := tx.Exec(ctx, pruneSQL, before, tickets)
	if err != nil {
		return 0, fmt.Errorf("prune the outbox rows final before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("prune the outbox: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Unfinished returns which of tickets ids still have an outbox row that is
// not final (pending, parked): a ticket with a message still owed or
// waiting for a person is not archived yet.
func Unfinished(ctx context.Context, tx pgx.Tx, ids []int64) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT ticket_id FROM sweeper.outbox
		WHERE ticket_id = ANY($1) AND state NOT IN ('sent', 'skipped', 'dismissed', 'folded')`, ids)
	if err != nil {
		return nil, fmt.Errorf("outbox rows of tickets to archive: %w", err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("outbox rows of tickets to archive: %w", err)
	}
	return held, nil
}

// DeleteArchived deletes every outbox row of archived tickets ids (each
// final: [Unfinished] kept the others' tickets out), their alerts in alert
// groups' threads included, and returns how many. The table's trigger
// refuses it for a ticket not archived.
func DeleteArchived(ctx context.Context, tx pgx.Tx, ids []int64) (int64, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM sweeper.outbox WHERE ticket_id = ANY($1)`, ids)
	if err != nil {
		return 0, fmt.Errorf("delete the outbox rows of %d archived ticket(s): %w", len(ids), err)
	}
	return tag.RowsAffected(), nil
}
