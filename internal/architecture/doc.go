// Package architecture holds no code: it is the home of the tests that keep
// the module's shape — which package may import which (imports_test.go),
// the layer chains docs/architecture.md draws (layers_test.go), one owner
// per table (tables_test.go) — and keep docs/architecture.md naming only
// packages, tests, files and Go names that exist (docs_test.go,
// glossary_test.go).
package architecture
