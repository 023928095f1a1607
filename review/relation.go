package review

// TicketsSQL is sweeper.tickets as another package's statement may read
// it: a relation of every ticket's id, state and resolved_at, for a
// statement that joins a table of its own to the tickets in one step (the
// outbox's prune of resolved tickets' rows). Use it where a table goes:
//
//	FROM `+review.TicketsSQL+` t WHERE t.state = 'resolved'
//
// PostgreSQL folds it into the statement, which costs what reading the
// table costs. Other columns, and every write, go through [Store].
const TicketsSQL = `(SELECT id, state, resolved_at FROM sweeper.tickets)`
