package logs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// logCalls are the slog functions and methods whose arguments are keys and
// values or attributes.
var logCalls = map[string]bool{
	"Debug": true, "Info": true, "Warn": true, "Error": true,
	"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true,
	"Log": true, "LogAttrs": true, "With": true,
	// slog's attribute constructors.
	"String": true, "Any": true, "Int": true, "Int64": true, "Bool": true, "Duration": true, "Group": true,
}

// errKeys returns where src logs under the key "err": a string literal
// "err" among the arguments of a logging call.
func errKeys(fset *token.FileSet, file *ast.File) []string {
	var found []string
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !logCalls[sel.Sel.Name] {
			return true
		}
		for _, arg := range call.Args {
			lit, ok := arg.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && s == "err" {
				found = append(found, fset.Position(lit.Pos()).String())
			}
		}
		return true
	})
	return found
}

func TestErrKeysFinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc, src string
		want      int
	}{
		{"a method's key", `d.logger.Warn("notify: attempt failed", "retry_in", delay, "err", err)`, 1},
		{"an attribute", `logger.Error("x", slog.String("err", err.Error()))`, 1},
		{"With", `logger.With("err", err)`, 1},
		{"the key error", `logger.Error("x", "error", err)`, 0},
		{"a value that says err", `logger.Info("x", "prefix", "err")`, 1},
		{"not a logging call", `fmt.Println("err")`, 0},
	} {
		t.Run(c.desc, func(t *testing.T) {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() {\n"+c.src+"\n}\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := errKeys(fset, file); len(got) != c.want {
				t.Errorf("found %v, want %d", got, c.want)
			}
		})
	}
}

// TestErrorsLoggedUnderOneKey: every log line of sweeper's own code gives
// its error under "error", so that one query or alert finds them all; no
// non-test Go file logs under "err".
func TestErrorsLoggedUnderOneKey(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	fset := token.NewFileSet()
	var found []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		found = append(found, errKeys(fset, file)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files under %s: not the module", files, root)
	}
	for _, at := range found {
		t.Errorf(`%s: logs an error under "err"; the key is "error"`, at)
	}
}
