package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unmainedDatabasePackages returns the directories under root (as slash
// paths relative to it) whose tests use package dbtest but whose TestMain,
// if any, does not call dbtest.Main, and how many directories use dbtest.
// Without it a package's shared database (dbtest.Tx) is never dropped and
// its goroutine leaks are never looked for.
func unmainedDatabasePackages(root string) (missing []string, users int, err error) {
	uses, mains := map[string]bool{}, map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		text := string(b)
		if strings.Contains(text, `"github.com/sweeper/sweeper/testkit/dbtest"`) {
			uses[dir] = true
		}
		// dbtest's own tests call Main unqualified.
		if strings.Contains(text, "dbtest.Main(m") || (dir == "testkit/dbtest" && strings.Contains(text, "Main(m)")) {
			mains[dir] = true
		}
		return nil
	})
	for dir := range uses {
		if !mains[dir] {
			missing = append(missing, dir)
		}
	}
	slices.Sort(missing)
	return missing, len(uses), err
}

// TestDatabasePackagesCallDBTestMain: every package whose tests use a
// database runs them through dbtest.Main, which drops its shared database
// and checks for leaked goroutines (notify/interact's shared database was
// left on the server after every run).
func TestDatabasePackagesCallDBTestMain(t *testing.T) {
	t.Parallel()
	missing, users, err := unmainedDatabasePackages(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if users < 15 {
		t.Fatalf("%d packages' tests use dbtest: not the module", users)
	}
	for _, dir := range missing {
		t.Errorf("%s: its tests use dbtest without a TestMain calling dbtest.Main (func TestMain(m *testing.M) { dbtest.Main(m) })", dir)
	}
}

// TestUnmainedDatabasePackagesFindsAPlantedOne: a package using dbtest
// without dbtest.Main is found; one with it, and one not using dbtest, are
// not.
func TestUnmainedDatabasePackagesFindsAPlantedOne(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"with/a_test.go":    "package with\nimport \"github.com/sweeper/sweeper/testkit/dbtest\"\n",
		"with/main_test.go": "package with\nfunc TestMain(m *testing.M) { dbtest.Main(m, dbtest.Parallel(4)) }\n",
		"without/a_test.go": "package without\nimport \"github.com/sweeper/sweeper/testkit/dbtest\"\n",
		"nodb/a_test.go":    "package nodb\nimport \"testing\"\n",
	}
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing, users, err := unmainedDatabasePackages(root)
	if err != nil || users != 2 || !slices.Equal(missing, []string{"without"}) {
		t.Errorf("unmainedDatabasePackages = %q, %d users, %v; want without alone of 2", missing, users, err)
	}
}
