package architecture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReceiversStandSideBySide: every package under notify/ that
// implements notify.Receiver is listed in receivers and has the rule of
// one (receiverMay: no other receiver, no silences); each says so to the
// compiler (var _ notify.Receiver = …); and no receiver imports another.
func TestReceiversStandSideBySide(t *testing.T) {
	root := moduleRoot(t)
	entries, err := os.ReadDir(filepath.Join(root, "notify"))
	if err != nil {
		t.Fatal(err)
	}
	found := []string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if declaresReceiver(t, filepath.Join(root, "notify", e.Name())) {
			found = append(found, "notify/"+e.Name())
		}
	}
	if want := slices.Sorted(slices.Values(receivers)); !slices.Equal(found, want) {
		t.Errorf("packages declaring a notify.Receiver: %q; the receivers list says %q", found, receivers)
	}
	for _, r := range receivers {
		rl, ok := ruleFor(rules, r)
		if !ok || !slices.Equal(rl.may, receiverMay) {
			t.Errorf("%s follows %+v; want a receiver's rule (receiverMay)", r, rl)
		}
	}
	for _, p := range modulePackages(t) {
		if !slices.Contains(receivers, p.path) {
			continue
		}
		for _, imp := range p.imports {
			if slices.Contains(receivers, imp) || imp == "notify/silence" {
				t.Errorf("%s imports %s: receivers stand side by side, silences are the dispatcher's (notify.Muter)", p.path, imp)
			}
		}
	}
}

// TestSilencesOnlyForTheWiringAndTheCLI: besides
// TestSilencesReachedOnlyThroughTheMuter (nothing under notify imports the
// silences), no package at all does but the wiring (app), which hands them
// to the dispatcher as its notify.Muter and to the page as typed
// functions, and the CLI; and the dispatcher's rule does not allow them.
func TestSilencesOnlyForTheWiringAndTheCLI(t *testing.T) {
	for _, p := range modulePackages(t) {
		rel := p.path
		if !slices.Contains(p.imports, "notify/silence") {
			continue
		}
		if rel != "app" && rel != "cmd/sweeper" {
			t.Errorf("%s imports notify/silence: only the wiring and the CLI may; the dispatcher uses notify.Muter", rel)
		}
	}
	if rl, _ := ruleFor(rules, "notify"); slices.Contains(rl.may, "notify/silence") || slices.Contains(rl.may, "notify/...") {
		t.Errorf("the dispatcher's rule lets it import the silences: %v", rl.may)
	}
}

// declaresReceiver reports whether the package in dir says, in its own
// (non-test) code, that a type of its satisfies notify.Receiver.
func declaresReceiver(t *testing.T, dir string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "notify.Receiver = (") {
			return true
		}
	}
	return false
}
