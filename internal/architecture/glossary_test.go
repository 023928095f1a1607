package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// glossaryEntry is one row of docs/architecture.md's "Words": a word, the
// Go name that is its one name (pkg.Name or pkg.Type.Name) and the package
// that declares it, relative to the module.
type glossaryEntry struct {
	word, name, pkg string
}

// glossary returns the rows of the table under "## Words".
func glossary(text string) ([]glossaryEntry, error) {
	_, section, ok := strings.Cut(text, "\n## Words\n")
	if !ok {
		return nil, fmt.Errorf(`no "## Words" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var out []glossaryEntry
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| word ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			return nil, fmt.Errorf("row %q: want | word | name | package | …", line)
		}
		unquote := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
		out = append(out, glossaryEntry{word: strings.TrimSpace(cells[0]), name: unquote(cells[1]), pkg: unquote(cells[2])})
	}
	return out, nil
}

// exportedNames returns the exported top-level names the non-test Go
// files of dir declare — Name for funcs, types, vars and consts,
// Type.Name for methods and struct fields — and the package's name.
func exportedNames(dir string) (pkgName string, names map[string]bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	names = map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", nil, err
		}
		pkgName = f.Name.Name
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() {
					continue
				}
				if decl.Recv == nil {
					names[decl.Name.Name] = true
				} else if recv := receiverType(decl.Recv.List[0].Type); ast.IsExported(recv) {
					names[recv+"."+decl.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						if !spec.Name.IsExported() {
							continue
						}
						names[spec.Name.Name] = true
						if st, ok := spec.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									if n.IsExported() {
										names[spec.Name.Name+"."+n.Name] = true
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							if n.IsExported() {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	if pkgName == "" {
		return "", nil, fmt.Errorf("%s: no Go files", dir)
	}
	return pkgName, names, nil
}

// checkGlossary returns one problem for each entry whose name is not an
// exported name of its package (read from root), or whose qualifier is not
// that package's name, and for a word listed twice.
func checkGlossary(root string, entries []glossaryEntry) []string {
	var problems []string
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.word] {
			problems = append(problems, fmt.Sprintf("%q: listed twice", e.word))
		}
		seen[e.word] = true
		qualifier, rest, ok := strings.Cut(e.name, ".")
		if !ok {
			problems = append(problems, fmt.Sprintf("%q: name %q is not package.Name", e.word, e.name))
			continue
		}
		pkgName, names, err := exportedNames(filepath.Join(root, filepath.FromSlash(e.pkg)))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%q: package %s: %v", e.word, e.pkg, err))
			continue
		}
		if qualifier != pkgName {
			problems = append(problems, fmt.Sprintf("%q: %s is package %s, not %s", e.word, e.pkg, pkgName, qualifier))
			continue
		}
		if !names[rest] {
			problems = append(problems, fmt.Sprintf("%q: package %s declares no exported %s", e.word, e.pkg, rest))
		}
	}
	return problems
}

// TestGlossaryNamesExist: every word of docs/architecture.md's "Words"
// names an exported Go name that its package declares.
func TestGlossaryNamesExist(t *testing.T) {
	root := moduleRoot(t)
	text, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := glossary(string(text))
	if err != nil {
		t.Fatal(err)
	}
	// A table the parser misread would check nothing.
	if len(entries) < 10 {
		t.Fatalf("%s: %d words read from \"## Words\", want at least 10", doc, len(entries))
	}
	for _, problem := range checkGlossary(root, entries) {
		t.Errorf("%s: %s", doc, problem)
	}
}

// TestCheckGlossaryFindsWhatDoesNotExist: the checker fails a name its
// package does not declare, an unexported one (ledger declares func
// literal), a wrong qualifier, a missing package and a word listed twice; and
// passes names that exist.
func TestCheckGlossaryFindsWhatDoesNotExist(t *testing.T) {
	root := moduleRoot(t)
	good := []glossaryEntry{
		{"operation", "ledger.Operation", "ledger"},
		{"status", "ledger.Status", "ledger"},
		{"re-lookup", "settle.Escalator.Relookup", "settle"},
		{"operation id", "ledger.Operation.ID", "ledger"},
	}
	if problems := checkGlossary(root, good); len(problems) != 0 {
		t.Errorf("names that exist failed: %v", problems)
	}
	for _, bad := range []glossaryEntry{
		{"missing", "ledger.NoSuchThing", "ledger"},
		{"unexported", "ledger.literal", "ledger"},
		{"wrong qualifier", "review.Operation", "ledger"},
		{"wrong package", "outbox.Notification", "notify"},
		{"no package", "nowhere.Thing", "nowhere"},
		{"not qualified", "Operation", "ledger"},
	} {
		if problems := checkGlossary(root, []glossaryEntry{bad}); len(problems) != 1 {
			t.Errorf("%+v: problems %v, want one", bad, problems)
		}
	}
	twice := []glossaryEntry{{"operation", "ledger.Operation", "ledger"}, {"operation", "ledger.Operation", "ledger"}}
	if problems := checkGlossary(root, twice); len(problems) != 1 {
		t.Errorf("a word listed twice: problems %v, want one", problems)
	}
}
