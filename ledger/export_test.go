package ledger

// SettleDoneSQL is [SettleDone]'s statement, for tests that EXPLAIN it.
const SettleDoneSQL = settleDoneSQL
