// Package architecture holds no code: it is the home of the test that keeps
// the module's shape — which package may import which (imports_test.go).
package architecture
