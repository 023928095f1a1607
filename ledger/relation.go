package ledger

// OperationsSQL is the table as another package's statement may read it:
// a relation of every operation's id, provider, status (sweeper's word)
// and created_at, for a statement that joins a table of its own to the
// operations in one step (review's tickets of a provider, jobs' claims of
// the operations still pending). Use it where a table goes:
//
//	FROM sweeper.tickets t JOIN `+table.OperationsSQL()+` o ON o.id = t.operation_id
//
// PostgreSQL folds it into the statement, which costs what a join on the
// table costs. Other columns, and every write, go through [Store].
func (t *Table) OperationsSQL() string { return t.sql.operations }
