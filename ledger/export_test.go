package ledger

// MoveToDoneSQL is [MoveToDone]'s statement, for tests that EXPLAIN it.
var MoveToDoneSQL = Native().sql.moveToDone

// MapError is mapError, for tests of the guards' refusals.
var MapError = mapError

// SetWordsTimeout sets how long Inspect scans for status words, for a
// test (not parallel) of the statistics it falls back on; it returns the
// restore.
func SetWordsTimeout(d string) func() {
	old := wordsTimeout
	wordsTimeout = d
	return func() { wordsTimeout = old }
}

// GuardStatements are the statements [InstallGuards] runs, for a test
// that shows them when they fail.
func (t *Table) GuardStatements() []string { return t.guardStatements() }
