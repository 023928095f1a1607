package ledger

// OperationsSQL is ledger.operations as another package's statement may
// read it: a relation of every operation's id, provider, status and
// created_at, for a statement that joins a table of its own to the
// operations in one step (review's tickets of a provider, jobs' claims of
// the operations still pending). Use it where a table goes:
//
//	FROM sweeper.tickets t JOIN `+ledger.OperationsSQL+` o ON o.id = t.operation_id
//
// PostgreSQL folds it into the statement, which costs what a join on the
// table costs. Other columns, and every write, go through [Store].
const OperationsSQL = `(SELECT id, provider, status, created_at FROM ledger.operations)`
