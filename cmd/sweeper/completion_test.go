package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/sweeper/sweeper/proof"
)

// TestCompletionOfFlagValues asks cobra's hidden __complete command, as
// the shell scripts do: an enum flag offers its values and no file names,
// a flag that takes a name or a note offers no file names.
func TestCompletionOfFlagValues(t *testing.T) {
	t.Parallel()
	noFiles := fmt.Sprintf(":%d", cobra.ShellCompDirectiveNoFileComp)
	var reasons []string
	for _, r := range proof.Reasons {
		reasons = append(reasons, string(r))
	}
	for _, tc := range []struct {
		desc string
		args []string
		want []string
	}{
		{desc: "tickets list --state", args: []string{"tickets", "list", "--state", ""}, want: []string{"open", "resolved", "all"}},
		{desc: "tickets list --reason", args: []string{"tickets", "list", "--reason", ""}, want: reasons},
		{desc: "tickets list --reason, a prefix", args: []string{"tickets", "list", "--reason", "provider_"},
			want: []string{"provider_failed", "provider_reversed"}},
		{desc: "tickets list --provider", args: []string{"tickets", "list", "--provider", ""}},
		{desc: "tickets resolve --outcome", args: []string{"tickets", "resolve", "3", "--outcome", ""}, want: []string{"done", "not_sent", "duplicate"}},
		{desc: "tickets resolve --outcome=", args: []string{"tickets", "resolve", "3", "--outcome=n"}, want: []string{"not_sent"}},
		{desc: "tickets resolve --by", args: []string{"tickets", "resolve", "3", "--by", ""}},
		{desc: "tickets resolve --note", args: []string{"tickets", "resolve", "3", "--note", ""}},
		{desc: "tickets ack --by", args: []string{"tickets", "ack", "3", "--by", ""}},
		{desc: "outbox list --state", args: []string{"outbox", "list", "--state", ""},
			want: []string{"pending", "sent", "parked", "dismissed", "skipped", "folded", "silenced", "all"}},
		{desc: "silences list --state", args: []string{"silences", "list", "--state", ""},
			want: []string{"active", "pending", "expired", "all"}},
		{desc: "outbox replay --error", args: []string{"outbox", "replay", "--all-parked", "--error", ""}},
		{desc: "outbox dismiss --note", args: []string{"outbox", "dismiss", "3", "--note", ""}},
		{desc: "healthcheck --path", args: []string{"healthcheck", "--path", ""}, want: []string{"/healthz", "/readyz"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
			want := strings.Join(append(tc.want, noFiles), "\n") + "\n"
			if r.code != exitOK || r.stdout != want {
				t.Errorf("code %d, completions\n%s\nwant\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
			}
		})
	}
}

// TestCompletionCoversEveryEnumFlag: every string flag of every command
// has a completion, so none falls back to file names unless it names a
// file (--config, bench's profiles, an --output file).
func TestCompletionCoversEveryEnumFlag(t *testing.T) {
	t.Parallel()
	files := map[string]bool{"config": true, "cpuprofile": true, "memprofile": true, "output": true}
	root := newRootCmd(&env{})
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "string" || files[f.Name] || f.Hidden {
				return
			}
			if _, ok := cmd.GetFlagCompletionFunc(f.Name); !ok {
				t.Errorf("%s --%s has no completion: the shell offers file names", cmd.CommandPath(), f.Name)
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
