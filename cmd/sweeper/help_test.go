package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestBooleanFlagsHelpPlain: every command's help shows a boolean flag as
// the switch a person types (--json), not --json[=true|false], and the
// switch still works with and without a value.
func TestBooleanFlagsHelpPlain(t *testing.T) {
	t.Parallel()
	var paths [][]string
	var walk func(*cobra.Command, []string)
	walk = func(cmd *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range cmd.Commands() {
			if !sub.Hidden {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(newRootCmd(&env{}), nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands", len(paths))
	}
	for _, path := range paths {
		r := runCLI(t, nil, append(path, "--help")...)
		if r.code != exitOK || !strings.Contains(r.stdout, "-h, --help ") {
			t.Errorf("sweeper %s --help: code %d\n%s%s", strings.Join(path, " "), r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, "[=true|false]") {
			t.Errorf("sweeper %s --help shows [=true|false]:\n%s", strings.Join(path, " "), r.stdout)
		}
	}
	r := runCLI(t, nil, "tickets", "list", "--help")
	if !strings.Contains(r.stdout, "\n      --json              print JSON\n") {
		t.Errorf("tickets list --help: --json not shown plainly and aligned:\n%s", r.stdout)
	}
	// The value stays optional and accepted.
	for _, args := range [][]string{{"hash", "--canonical", "{}"}, {"hash", "--canonical=true", "{}"}} {
		if r := runCLI(t, nil, args...); r.code != exitOK || r.stdout != "{}\n" {
			t.Errorf("%v: code %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t, nil, "hash", "--canonical=false", "{}"); r.code != exitOK || r.stdout != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\n" {
		t.Errorf("--canonical=false: code %d, stdout %q", r.code, r.stdout)
	}
}
