package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tableConstructors are the constructors of the stores that read or write
// the ledger, by package name, and the position of their required
// *ledger.Table parameter. The table is bound once, when the app is built
// (config.Config.LedgerTable), and handed to each of them: none of them
// falls back to ledger.operations.
var tableConstructors = map[string]int{
	"ledger.NewStore":       1,
	"review.NewStore":       1,
	"review.NewReader":      1,
	"settle.NewSettler":     0,
	"settle.NewScanner":     0,
	"settle.NewOutages":     0,
	"app.NewStateCollector": 1,
}

// tableLiterals are the settle types that hold a table: a value of one is
// made only as the argument of its constructor, which sets the table.
var tableLiterals = map[string]string{
	"settle.Settler": "settle.NewSettler",
	"settle.Scanner": "settle.NewScanner",
	"settle.Outages": "settle.NewOutages",
}

// ledgerTableProblems walks the Go files under root and returns where a
// ledger table could be left out: a ForTable method or call (a store made
// first and pointed at its table after), a table constructor declared
// without its *ledger.Table parameter or called without it (or with nil), a
// settle value made outside its constructor, and an exported field of
// type *ledger.Table (a caller could leave it nil).
func ledgerTableProblems(root string) (problems []string, files int, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		for _, p := range fileTableProblems(fset, f, strings.HasSuffix(path, "_test.go")) {
			problems = append(problems, rel+":"+p)
		}
		return nil
	})
	slices.Sort(problems)
	return problems, files, err
}

// fileTableProblems is [ledgerTableProblems] for one file.
func fileTableProblems(fset *token.FileSet, f *ast.File, test bool) []string {
	pkg := strings.TrimSuffix(f.Name.Name, "_test")
	var out []string
	at := func(n ast.Node, format string, args ...any) {
		out = append(out, fmt.Sprintf("%d: ", fset.Position(n.Pos()).Line)+fmt.Sprintf(format, args...))
	}
	// qualified is pkg.Name for a call's or literal's Name or sel.Name.
	qualified := func(e ast.Expr) string {
		switch e := e.(type) {
		case *ast.Ident:
			return pkg + "." + e.Name
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok {
				return x.Name + "." + e.Sel.Name
			}
		}
		return ""
	}
	isTable := func(e ast.Expr) bool {
		star, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		q := qualified(star.X)
		return q == "ledger.Table"
	}
	blessed := map[ast.Node]bool{} // literals made as their constructor's argument
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil {
				if n.Name.Name == "ForTable" {
					at(n, "method ForTable: a store takes its ledger table when it is made, not after")
				}
				return true
			}
			idx, ok := tableConstructors[pkg+"."+n.Name.Name]
			if !ok || test {
				return true
			}
			var params []ast.Expr
			for _, field := range n.Type.Params.List {
				for range max(1, len(field.Names)) {
					params = append(params, field.Type)
				}
			}
			if idx >= len(params) || !isTable(params[idx]) {
				at(n, "%s.%s: parameter %d must be the required *ledger.Table", pkg, n.Name.Name, idx+1)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ForTable" {
				at(n, "call of ForTable: pass the ledger table to the constructor")
			}
			name := qualified(n.Fun)
			if idx, ok := tableConstructors[name]; ok {
				if idx >= len(n.Args) {
					at(n, "%s called without its ledger table (argument %d)", name, idx+1)
				} else if id, ok := n.Args[idx].(*ast.Ident); ok && id.Name == "nil" {
					at(n, "%s called with a nil ledger table: pass ledger.Native() or the configured table", name)
				}
			}
			for _, a := range n.Args {
				if lit, ok := a.(*ast.CompositeLit); ok && tableLiterals[qualified(lit.Type)] == name {
					blessed[lit] = true
				}
			}
		case *ast.CompositeLit:
			if ctor, ok := tableLiterals[qualified(n.Type)]; ok && !blessed[n] {
				at(n, "%s made outside %s: it would have no ledger table", qualified(n.Type), ctor)
			}
		case *ast.StructType:
			if test {
				return true
			}
			for _, field := range n.Fields.List {
				for _, name := range field.Names {
					if name.IsExported() && isTable(field.Type) {
						at(field, "exported field %s *ledger.Table: a caller could leave it nil; take the table in a constructor", name.Name)
					}
				}
			}
		}
		return true
	})
	return out
}

// TestLedgerTableBoundOnce: no store that reads or writes the ledger can
// be made without its table. Constructors take it as a required argument
// (forgetting it does not compile, and this test fails if a signature
// loses it); there is no ForTable to point a store made on the native
// table elsewhere after the fact.
func TestLedgerTableBoundOnce(t *testing.T) {
	t.Parallel()
	problems, files, err := ledgerTableProblems(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files; the walk missed the module", files)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestLedgerTableFindsPlantedOnes: each way of leaving the table out is
// found in a planted module, and the bound forms are not.
func TestLedgerTableFindsPlantedOnes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"review/ticket.go": `package review
type Store struct{ ledger *ledger.Table }
func NewStore(db TxBeginner, policy Policy) *Store { return &Store{} }
func NewReader(db ledger.DB, t *ledger.Table) *Reader { return nil }
func (s *Store) ForTable(t *ledger.Table) *Store { return s }
`,
		"settle/settler.go": `package settle
type Settler struct{ Ledger *ledger.Table; ledger *ledger.Table }
func NewSettler(t *ledger.Table, s Settler) *Settler { return &s }
`,
		"web/web_test.go": `package web_test
func f() {
	_ = review.NewReader(tx)
	_ = review.NewReader(tx, ledger.Native())
	_ = review.NewStore(tx, nil, policy)
	_ = review.NewStore(tx, table, policy).ForTable(t)
	_ = ledger.NewStore(tx, ledger.Native())
	_ = &settle.Scanner{DB: tx}
	_ = settle.NewScanner(ledger.Native(), settle.Scanner{DB: tx})
	_ = settle.NewOutages(ledger.Native(), settle.Settler{DB: tx})
}
`,
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, n, err := ledgerTableProblems(dir)
	if err != nil || n != 3 {
		t.Fatalf("ledgerTableProblems: %d files, %v", n, err)
	}
	want := []string{
		"review/ticket.go:3: review.NewStore: parameter 2 must be the required *ledger.Table",
		"review/ticket.go:5: method ForTable: a store takes its ledger table when it is made, not after",
		"settle/settler.go:2: exported field Ledger *ledger.Table: a caller could leave it nil; take the table in a constructor",
		"web/web_test.go:10: settle.Settler made outside settle.NewSettler: it would have no ledger table",
		"web/web_test.go:3: review.NewReader called without its ledger table (argument 2)",
		"web/web_test.go:5: review.NewStore called with a nil ledger table: pass ledger.Native() or the configured table",
		"web/web_test.go:6: call of ForTable: pass the ledger table to the constructor",
		"web/web_test.go:8: settle.Scanner made outside settle.NewScanner: it would have no ledger table",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ledgerTableProblems found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
