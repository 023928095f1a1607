// Package architecture holds no code: it is the home of the tests that keep
// the module's shape — which package may import which (imports_test.go) —
// and keep docs/architecture.md naming only packages, tests and files that
// exist (docs_test.go).
package architecture
