package ledger

// MoveToDoneSQL is [MoveToDone]'s statement, for tests that EXPLAIN it.
const MoveToDoneSQL = moveToDoneSQL
