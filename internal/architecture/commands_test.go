package architecture

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxCommandLines is the most lines a file of cmd/sweeper's own code may
// have: a command reads its flags, calls the package that owns what it
// does and prints the answer; what it computes lives in that package.
const maxCommandLines = 200

// longFiles returns, for each Go file of dir but its tests longer than
// max lines, "name: N lines", by name; and how many files it read.
func longFiles(dir string, max int) (long []string, files int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, files, err
		}
		files++
		n := bytes.Count(b, []byte("\n"))
		if len(b) > 0 && b[len(b)-1] != '\n' {
			n++
		}
		if n > max {
			long = append(long, fmt.Sprintf("%s: %d lines", name, n))
		}
	}
	slices.Sort(long)
	return long, files, nil
}

// TestLongFilesFindsAPlantedOne: a file one line past the limit is found,
// one at the limit and a long test file are not.
func TestLongFilesFindsAPlantedOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, lines := range map[string]int{"at.go": 200, "past.go": 201, "past_test.go": 500} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("//\n", lines)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long, files, err := longFiles(dir, 200)
	if err != nil || files != 2 || !slices.Equal(long, []string{"past.go: 201 lines"}) {
		t.Errorf("longFiles = %q, %d files, %v; want past.go alone of 2", long, files, err)
	}
}

// TestCommandsStayThin: no file of cmd/sweeper but its tests is longer
// than maxCommandLines.
func TestCommandsStayThin(t *testing.T) {
	t.Parallel()
	long, files, err := longFiles(filepath.Join("..", "..", "cmd", "sweeper"), maxCommandLines)
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("read %d files of cmd/sweeper: not the command", files)
	}
	for _, l := range long {
		t.Errorf("cmd/sweeper/%s, more than %d: move what it computes to the package that owns it", l, maxCommandLines)
	}
}
