package ledger

// MoveToDoneSQL is [MoveToDone]'s statement, for tests that EXPLAIN it.
var MoveToDoneSQL = Native().sql.moveToDone

// MapError is mapError, for tests of the guards' refusals.
var MapError = mapError
