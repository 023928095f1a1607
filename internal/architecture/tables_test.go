// Package architecture holds tests of how sweeper's code is laid out: rules
// that no one package's tests can see.
package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// owners maps every table to the one package (its directory in the module)
// whose SQL may name it; any other package asks the owner. A table a shop
// adopts in place of ledger.operations ([ledger] in the configuration) has
// no name known here: ledger renders every statement on it from a
// ledger.Table ({T}), and reads its catalog (ledger.Inspect) and installs
// its guards (ledger.InstallGuards) itself, so it is ledger's as
// ledger.operations is. River's tables
// are River's, reached through jobs, which holds the River client.
var owners = map[string]string{
	"ledger.operations":                  "ledger",
	"sweeper.record_namespaces":          "ledger",
	"sweeper.tickets":                    "review",
	"sweeper.ticket_events":              "review",
	"sweeper.ticket_archives":            "review",
	"sweeper.outbox":                     "notify/outbox",
	"sweeper.alert_groups":               "notify/outbox",
	"sweeper.alert_group_owner_messages": "notify/outbox",
	"sweeper.incidents":                  "notify/outbox",
	"sweeper.routes":                     "notify/outbox",
	"sweeper.silences":                   "notify/silence",
	"sweeper.lookup_claims":              "jobs",
	"sweeper.provider_health":            "health",
	"sweeper.provider_rate":              "health",
	"sweeper.provider_lone_failures":     "health",
	"sweeper.provider_tokens":            "health",
	"sweeper.audits":                     "settle",

	"sweeper.river_job":          "jobs",
	"sweeper.river_leader":       "jobs",
	"sweeper.river_queue":        "jobs",
	"sweeper.river_client":       "jobs",
	"sweeper.river_client_queue": "jobs",
	"sweeper.river_migration":    "jobs",
}

// exempt are the directories whose code may name any table, and why. Test
// files (*_test.go) are exempt everywhere: a test sets up and inspects
// rows directly.
var exempt = map[string]string{
	"migrations":  "creates every table",
	"tools/bench": "`sweeper bench`: fills a scratch ledger as workflows do and watches it drain",
	"tools/benchkit": "the bench's machinery: fills the ledger, reads River's jobs for latency, " +
		"measures River alone",
	"tools/demo":       "`sweeper demo`: seeds a throwaway ledger and narrates every table as a test would",
	"examples/n8n/e2e": "an end-to-end test program: plays the workflow that writes the ledger",
}

// knownExceptions are the (file, table) pairs that name another package's
// table today. The list only shrinks: an entry no longer found fails the
// test, so that it is removed with the code it excused.
var knownExceptions = map[[2]string]bool{}

// tableName matches a table as SQL names it: schema-qualified (group 1),
// or bare after a keyword that introduces a table (group 2). Either way
// the name ends at a character that cannot continue an identifier, so
// sweeper.tickets_guard (a function) is not sweeper.tickets.
var tableName = func() *regexp.Regexp {
	var tables, bare []string
	for table := range owners {
		tables = append(tables, regexp.QuoteMeta(table))
		bare = append(bare, regexp.QuoteMeta(table[strings.IndexByte(table, '.')+1:]))
	}
	slices.Sort(tables)
	slices.Sort(bare)
	return regexp.MustCompile(`(?i)(?:\b(` + strings.Join(tables, "|") + `)` +
		`|\b(?:FROM|JOIN|INTO|UPDATE|TABLE|USING|TRUNCATE|ANALYZE|ONLY)\s+(` + strings.Join(bare, "|") + `))(?:[^\w$]|$)`)
}()

// sqlWord tells a literal that speaks SQL from prose that mentions a
// table: sweeper's SQL writes its keywords in capitals.
var sqlWord = regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|WITH|FROM|JOIN|WHERE|TRUNCATE|ANALYZE|VACUUM|LOCK|COPY|ALTER|CREATE)\b`)

// use is one string literal that names a table in SQL.
type use struct {
	at    token.Position
	table string // schema-qualified
}

// tablesNamed returns the tables file's string literals name in SQL: in a
// literal that speaks SQL (a capitalised keyword), or one that is a table's
// name alone (an identifier put together elsewhere).
func tablesNamed(fset *token.FileSet, file *ast.File) []use {
	var found []use
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		// A table's name alone is an identifier, put in SQL elsewhere.
		if name := strings.TrimSpace(s); owners[name] != "" || strings.HasPrefix(name, "river_") && owners["sweeper."+name] != "" {
			found = append(found, use{fset.Position(lit.Pos()), qualified(name)})
			return true
		}
		// A statement written for whichever table the [ledger] mapping
		// names ({T}, rendered by ledger.Table.SQL) is a statement on the
		// ledger's table.
		if strings.Contains(s, "{T}") {
			found = append(found, use{fset.Position(lit.Pos()), "ledger.operations"})
		}
		if !sqlWord.MatchString(s) {
			return true
		}
		for _, m := range tableName.FindAllStringSubmatch(s, -1) {
			found = append(found, use{fset.Position(lit.Pos()), qualified(strings.ToLower(m[1] + m[2]))})
		}
		return true
	})
	return found
}

// qualified returns table with its schema: a bare name is the one table
// of owners it names.
func qualified(table string) string {
	if strings.Contains(table, ".") {
		return table
	}
	for t := range owners {
		if strings.HasSuffix(t, "."+table) {
			return t
		}
	}
	panic("no table " + table)
}

// violation is a use of a table outside its owner, in the file at rel
// (slash-separated, from the scanned root).
type violation struct {
	rel string
	use
}

// violations returns the uses of the file at rel that name a table its
// package does not own.
func violations(rel string, uses []use) []violation {
	dir := path.Dir(rel)
	if _, ok := exempt[dir]; ok || strings.HasSuffix(rel, "_test.go") {
		return nil
	}
	var out []violation
	for _, u := range uses {
		if owners[u.table] != dir {
			out = append(out, violation{rel, u})
		}
	}
	return out
}

// scan parses every Go file under root (leaving out hidden directories,
// testdata, vendor and node_modules) and returns the violations found and
// how many files it read.
func scan(root string) (found []violation, files int, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		file, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		files++
		found = append(found, violations(filepath.ToSlash(rel), tablesNamed(fset, file))...)
		return nil
	})
	return found, files, err
}

func TestTablesNamedFinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc, src string
		want      []string
	}{
		{"a qualified table", "`SELECT count(*) FROM ledger.operations WHERE status = 'pending'`", []string{"ledger.operations"}},
		{"two tables joined", "`SELECT 1 FROM sweeper.tickets t JOIN ledger.operations o ON o.id = t.operation_id`",
			[]string{"sweeper.tickets", "ledger.operations"}},
		{"a bare table after a keyword", "`UPDATE outbox SET state = 'sent'`", []string{"sweeper.outbox"}},
		{"lower-case SQL around a capitalised keyword", "`select 1 from sweeper.incidents WHERE true`", []string{"sweeper.incidents"}},
		{"a table at the end", "`DELETE FROM sweeper.lookup_claims`", []string{"sweeper.lookup_claims"}},
		{"River's table", "`SELECT queue FROM sweeper.river_job`", []string{"sweeper.river_job"}},
		{"River's table bare", "`SELECT queue FROM river_job`", []string{"sweeper.river_job"}},
		{"a table's name alone", `"sweeper.provider_health"`, []string{"sweeper.provider_health"}},
		{"River's table's name alone", `"river_job"`, []string{"sweeper.river_job"}},
		{"a literal put together", "`SELECT 1 FROM ` + \"sweeper.alert_groups\"", []string{"sweeper.alert_groups"}},
		{"a function, not the table", "`SELECT sweeper.record_namespace_blocks($1)`", nil},
		{"a trigger, not the table", "`DROP TRIGGER x ON sweeper.tickets_guard`", nil},
		{"no such table", "`SELECT 1 FROM ledger.tickets`", nil},
		{"the mapped ledger table", "`SELECT {c:id} FROM {T} WHERE {c:status} = {w:pending}`", []string{"ledger.operations"}},
		{"capitals", "`SELECT 1 FROM Sweeper.Tickets`", []string{"sweeper.tickets"}},
		{"prose", `"fills ledger.operations, runs the real sweep"`, nil},
		{"prose on a column", `"the value a workflow writes into ledger.operations.payload_hash"`, nil},
		{"a bare word in prose", `"skip the rows of ticket %d from outbox row %d"`, nil},
		{"a setting", `"http.river_ui"`, nil},
	} {
		t.Run(c.desc, func(t *testing.T) {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, "x.go", "package x\nvar v = "+c.src+"\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range tablesNamed(fset, file) {
				got = append(got, u.table)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("found %q, want %q", got, c.want)
			}
		})
	}
}

// TestScanFindsAPlantedViolation: in a tree with one package naming
// another's table, the scan finds that one use, and not the owner's, a
// test file's or the migrations'.
func TestScanFindsAPlantedViolation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const query = "package x\n\nconst q = `SELECT count(*) FROM ledger.operations WHERE status = 'pending'`\n"
	for _, rel := range []string{"review/planted.go", "ledger/store.go", "review/reader_test.go",
		"migrations/migrations.go", "tools/demo/demo.go", "ledger/sub/x.go"} {
		if err := os.MkdirAll(filepath.Join(root, path.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(query), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, files, err := scan(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range found {
		got = append(got, v.rel+": "+v.table)
	}
	// A package below the owner is another package.
	want := []string{"ledger/sub/x.go: ledger.operations", "review/planted.go: ledger.operations"}
	if files != 6 || !slices.Equal(got, want) {
		t.Errorf("read %d files, found %q; want 6 files, %q", files, got, want)
	}
}

// TestOneOwnerPerTable: every table is named in SQL by the one package that
// owns it (owners); the others call its functions. Test files, the
// migrations and the harnesses of exempt may name any table.
func TestOneOwnerPerTable(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	for dir := range exempt {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("exempt directory %s: %v", dir, err)
		}
	}
	for table, dir := range owners {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("%s: owner %s: %v", table, dir, err)
		}
	}
	found, files, err := scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the module", files, root)
	}
	seen := map[[2]string]bool{}
	for _, v := range found {
		if knownExceptions[[2]string{v.rel, v.table}] {
			seen[[2]string{v.rel, v.table}] = true
			continue
		}
		t.Errorf("%s: names %s, which package %s owns: call a function of %[3]s instead", v.at, v.table, owners[v.table])
	}
	for e := range knownExceptions {
		if !seen[e] {
			t.Errorf("%s no longer names %s: remove it from knownExceptions", e[0], e[1])
		}
	}
}
