package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// doc is the page the test holds to the code, relative to the module.
const doc = "docs/architecture.md"

// moduleRoot returns the module's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod)
}

// code is what the module declares, read from its Go files.
type code struct {
	// tests holds every func TestX of the module's _test.go files.
	tests map[string]bool
	// decls holds, by package name, the top-level names of its non-test
	// files: funcs, types, vars and consts as Name, methods and struct
	// fields as Type.Name.
	decls map[string]map[string]bool
}

func readCode(t *testing.T, root string) code {
	t.Helper()
	c := code{tests: map[string]bool{}, decls: map[string]map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		isTest := strings.HasSuffix(path, "_test.go")
		names := c.decls[f.Name.Name]
		if names == nil && !isTest {
			names = map[string]bool{}
			c.decls[f.Name.Name] = names
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				switch {
				case isTest && decl.Recv == nil && strings.HasPrefix(decl.Name.Name, "Test"):
					c.tests[decl.Name.Name] = true
				case isTest:
				case decl.Recv == nil:
					names[decl.Name.Name] = true
				default:
					names[receiverType(decl.Recv.List[0].Type)+"."+decl.Name.Name] = true
				}
			case *ast.GenDecl:
				if isTest {
					continue
				}
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						names[spec.Name.Name] = true
						if st, ok := spec.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									names[spec.Name.Name+"."+n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the module's Go files: %v", err)
	}
	return c
}

// receiverType is the name of a method's receiver type: T for T, *T,
// T[P] and *T[P].
func receiverType(expr ast.Expr) string {
	for {
		switch e := expr.(type) {
		case *ast.StarExpr:
			expr = e.X
		case *ast.IndexExpr:
			expr = e.X
		case *ast.IndexListExpr:
			expr = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// declared reports whether name — Name or Type.Name — is declared in a
// package called pkg, or, with pkg empty, in any package.
func (c code) declared(pkg, name string) bool {
	for p, names := range c.decls {
		if (pkg == "" || p == pkg) && names[name] {
			return true
		}
	}
	return false
}

var (
	backticked  = regexp.MustCompile("`([^`\n]+)`")
	testName    = regexp.MustCompile(`^Test\w*\*?$`)
	packagePath = regexp.MustCompile(`^[a-z][a-z0-9]*(/[a-z0-9_]+)+/?$`)
	identifier  = regexp.MustCompile(`^[A-Za-z]\w*(\.[A-Z]\w*)+$`)
	filePath    = regexp.MustCompile(`[\w./-]*\w\.(go|md|toml|yaml|yml|sql|json|service)\b`)
	// placeholder is a name a page writes for the reader's own (`NAME`).
	placeholder = regexp.MustCompile(`^[A-Z][A-Z_]*$`)
	// linkTarget is a Markdown link's target, "](…)", relative to its page.
	linkTarget = regexp.MustCompile(`\]\([^)\s]*\)`)
)

// docPages returns the project's documentation pages, relative to root:
// README.md and every docs/*.md.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	if !slices.Contains(out, doc) {
		t.Fatalf("no %s among the pages %v", doc, out)
	}
	return out
}

// TestDocNamesWhatExists: every documentation page (README.md, docs/*.md)
// names only what exists — every test it credits (`TestX`, or `TestX*` for
// tests named so), every identifier it qualifies (`ledger.MoveToDone`,
// `health.Tracker.OnDown`, `Provider.LookupMany`), every package path and
// every file it mentions by its path from the module's root; and
// docs/architecture.md's package list names only packages that exist.
// Links are TestDocLinksResolve's: they are read from their page.
func TestDocNamesWhatExists(t *testing.T) {
	root := moduleRoot(t)
	c := readCode(t, root)
	packages := map[string]bool{}
	for _, p := range modulePackages(t) {
		packages[p.path] = true
	}
	for _, page := range docPages(t, root) {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		md := linkTarget.ReplaceAllString(string(text), "]")
		problems := checkNames(md, c, packages, root)
		if page == doc {
			problems = checkDoc(md, c, packages, root)
		}
		for _, problem := range problems {
			t.Errorf("%s: %s", page, problem)
		}
	}
}

// checkDoc returns what text names that does not exist, its package list
// included (see checkNames): packages holds the module's packages relative
// to it, root is its directory.
func checkDoc(text string, c code, packages map[string]bool, root string) []string {
	problems := checkNames(text, c, packages, root)
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil
	}
	// The package list's problems come before the files named outside it.
	var names, files []string
	for _, p := range problems {
		if strings.HasSuffix(p, ": no such file") {
			files = append(files, p)
		} else {
			names = append(names, p)
		}
	}
	names = append(names, checkPackageList(text, packages, exists)...)
	return append(names, files...)
}

// checkNames returns what text names that does not exist: the tests, the
// qualified identifiers, the package paths between backquotes, and the
// files named with a directory outside a "## Packages" list.
func checkNames(text string, c code, packages map[string]bool, root string) []string {
	var problems []string
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil
	}
	pkgNames := map[string]bool{}
	for name := range c.decls {
		pkgNames[name] = true
	}
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		name := m[1]
		switch {
		case testName.MatchString(name):
			if prefix, wild := strings.CutSuffix(name, "*"); wild {
				if !slices.ContainsFunc(keys(c.tests), func(test string) bool { return strings.HasPrefix(test, prefix) }) {
					problems = append(problems, "`"+name+"`: no test of the module is named so")
				}
			} else if !c.tests[name] {
				problems = append(problems, "`"+name+"`: no func "+name+" in the module's tests")
			}
		case packagePath.MatchString(name):
			// A path under none of the module's directories is not the
			// module's: `net/http`, `http/protobuf`, `testdata/fuzz/`.
			top, _, _ := strings.Cut(name, "/")
			if rel := strings.TrimSuffix(name, "/"); isDir(filepath.Join(root, top)) && !packages[rel] && !exists(rel) {
				problems = append(problems, "`"+name+"`: no such package or directory")
			}
		case identifier.MatchString(name):
			pkg, rest, _ := strings.Cut(name, ".")
			switch {
			case placeholder.MatchString(rest): // `providers.NAME`
			case pkg[0] >= 'A' && pkg[0] <= 'Z': // Type.Method
				if !c.declared("", name) {
					problems = append(problems, "`"+name+"`: declared in no package")
				}
			case pkgNames[pkg]:
				if !c.declared(pkg, rest) {
					problems = append(problems, "`"+name+"`: package "+pkg+" declares no "+rest)
				}
			}
		}
	}
	for _, file := range filesOutsidePackageList(text) {
		// A path from / or ./ is the reader's machine's, not the module's.
		if !strings.HasPrefix(file, "/") && !strings.HasPrefix(file, "./") && !exists(file) {
			problems = append(problems, file+": no such file")
		}
	}
	return problems
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// packageList returns the rows of the fenced block under "## Packages":
// each row's first field (a package path, or a directory of packages) and
// the rest of its text, continuation lines joined.
func packageList(text string) (paths, texts []string) {
	_, section, ok := strings.Cut(text, "\n## Packages\n")
	if !ok {
		return nil, nil
	}
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		return nil, nil
	}
	block, _, _ = strings.Cut(block, "```")
	for line := range strings.Lines(block) {
		line = strings.TrimRight(line, "\n")
		if line == "" {
			continue
		}
		if line[0] != ' ' {
			path, rest, _ := strings.Cut(line, " ")
			paths, texts = append(paths, path), append(texts, strings.TrimSpace(rest))
			continue
		}
		if len(texts) > 0 {
			texts[len(texts)-1] += " " + strings.TrimSpace(line)
		}
	}
	return paths, texts
}

// checkPackageList checks each row of the package list: its path is a
// package, or a directory whose row lists packages in it by name
// ("health (…), logs (…), dbtest, …"); and each file a row names exists
// in the row's directory.
func checkPackageList(text string, packages map[string]bool, exists func(string) bool) []string {
	var problems []string
	paths, texts := packageList(text)
	if len(paths) == 0 {
		return []string{`no package list: want a fenced block under "## Packages"`}
	}
	for i, path := range paths {
		dir := strings.TrimSuffix(path, "/")
		switch {
		case packages[dir]:
		case exists(dir):
			for _, name := range listedNames(texts[i]) {
				if !packages[dir+"/"+name] {
					problems = append(problems, "package list: "+path+" lists "+name+", but there is no package "+dir+"/"+name)
				}
			}
		default:
			problems = append(problems, "package list: "+path+": no such package or directory")
		}
		for _, file := range filePath.FindAllString(texts[i], -1) {
			if !strings.Contains(file, "/") && !exists(dir+"/"+file) {
				problems = append(problems, "package list: "+path+" names "+file+", not in "+dir)
			}
		}
	}
	return problems
}

// listedNames returns the first word of each comma-separated item of a
// directory's row, commas inside parentheses aside.
func listedNames(text string) []string {
	var names []string
	depth, start := 0, 0
	for i, r := range text + "," {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if fields := strings.Fields(text[start:min(i, len(text))]); len(fields) > 0 {
					names = append(names, fields[0])
				}
				start = i + 1
			}
		}
	}
	return names
}

// filesOutsidePackageList returns the file paths with a directory
// ("docs/adapters.md") that text names outside its package list, whose
// bare file names belong to the rows they are in.
func filesOutsidePackageList(text string) []string {
	before, section, ok := strings.Cut(text, "\n## Packages\n")
	if ok {
		if _, after, ok := strings.Cut(section, "```\n"); ok {
			if _, after, ok := strings.Cut(after, "```"); ok {
				text = before + after
			}
		}
	}
	var files []string
	for _, file := range filePath.FindAllString(text, -1) {
		if strings.Contains(file, "/") {
			files = append(files, file)
		}
	}
	return files
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestCheckDocFindsWhatDoesNotExist: the checker itself fails a test, an
// identifier, a package, a listed sub-package and files that do not exist,
// and passes those that do.
func TestCheckDocFindsWhatDoesNotExist(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"docs", "app", "internal/logs", "cmd/sweeper"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{"docs/adapters.md", "cmd/sweeper/root.go"} {
		if err := os.WriteFile(filepath.Join(root, file), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := code{
		tests: map[string]bool{"TestDecide": true, "TestGuardsDownUp": true},
		decls: map[string]map[string]bool{"ledger": {"MoveToDone": true, "Clock": true}, "health": {"Tracker.OnDown": true}},
	}
	packages := map[string]bool{"app": true, "internal/logs": true, "cmd/sweeper": true}
	text := "# x\n\n" +
		"`TestDecide`, `TestGuards*`, `TestGone`, `TestNone*`; `ledger.MoveToDone`, `health.Tracker.OnDown`, `ledger.Batcher`,\n" +
		"`Tracker.OnDown`, `Tracker.Gone`, `ledger.operations` (a table), `sweeper.lookup_claims` (a table);\n" +
		"`app`, `internal/gone`; docs/adapters.md, docs/gone.md.\n" +
		"Not the module's: `net/http`, `testdata/fuzz/`, `providers.NAME`, /etc/sweeper/sweeper.toml, ./sweeper.toml.\n\n" +
		"## Packages\n\n```\n" +
		"cmd/sweeper     the CLI: root.go, gone.go\n" +
		"app    the wiring\n" +
		"internal/       logs (repeated errors, with a count), gone\n" +
		"nowhere/        nothing\n" +
		"```\n"
	want := []string{
		"`TestGone`: no func TestGone in the module's tests",
		"`TestNone*`: no test of the module is named so",
		"`ledger.Batcher`: package ledger declares no Batcher",
		"`Tracker.Gone`: declared in no package",
		"`internal/gone`: no such package or directory",
		"package list: cmd/sweeper names gone.go, not in cmd/sweeper",
		"package list: internal/ lists gone, but there is no package internal/gone",
		"package list: nowhere/: no such package or directory",
		"docs/gone.md: no such file",
	}
	got := checkDoc(text, c, packages, root)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkDoc found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
