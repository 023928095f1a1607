package ledger

import (
	"context"
	"fmt"
)

// SweeperWriterSQL declares, for the rest of the current transaction, that
// sweeper is the writer: it sets the custom setting sweeper.writer to
// "sweeper", transaction-local. The database's guards let only such a
// transaction move an operation to review and change a ticket's owner,
// priority, escalation level, deadline, repeat count or exhausted flag.
// It is exported for callers that queue it in a pgx.Batch; others call
// [DeclareSweeperWriter].
const SweeperWriterSQL = `SELECT set_config('sweeper.writer', 'sweeper', true)`

// DeclareSweeperWriter runs [SweeperWriterSQL] on db, which must be the
// transaction about to write: outside one, the setting ends with the
// statement. The declaration is not a permission — any session may make it
// — but a statement of intent that keeps a workflow or a hand-made fix from
// doing by mistake what only sweeper's transactions do (a row enters review
// together with its ticket). It lasts until the transaction ends, including
// after a savepoint that made it is released. Its only error is the
// database's, wrapped.
func DeclareSweeperWriter(ctx context.Context, db DB) error {
	if _, err := db.Exec(ctx, SweeperWriterSQL); err != nil {
		return fmt.Errorf("declare sweeper as the writer: %w", err)
	}
	return nil
}
