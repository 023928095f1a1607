package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestGlobalFlagsBeforeOrAfterTheCommand: --config and --json mean the same
// before the command, between a group and its command, and after it.
func TestGlobalFlagsBeforeOrAfterTheCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"check-config", "--config", exampleConfig},
		{"--config", exampleConfig, "check-config"},
		{"--config=" + exampleConfig, "check-config"},
	} {
		r := runCLI(t, exampleChoices, args...)
		if r.code != exitOK || !strings.Contains(r.stdout, "config.example.toml is valid") {
			t.Errorf("sweeper %s: code %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}

	environ := withExampleChoices(map[string]string{config.EnvDatabaseURL: dbtest.NewEmptyDatabase(t)})
	for _, args := range [][]string{
		{"migrate", "--status", "--json", "--config", exampleConfig},
		{"--json", "migrate", "--status", "--config", exampleConfig},
		{"--config", exampleConfig, "--json", "migrate", "--status"},
	} {
		r := runCLI(t, environ, args...)
		var versions []migrations.Version
		// Exit 3: an empty database has every migration pending.
		if err := json.Unmarshal([]byte(r.stdout), &versions); r.code != exitPending || err != nil || len(versions) == 0 {
			t.Errorf("sweeper %s: code %d, %v\n%s%s", strings.Join(args, " "), r.code, err, r.stdout, r.stderr)
		}
	}
	// Between a group and its command too, and a usage mistake after it.
	r := runCLI(t, nil, "tickets", "--config", "nope.toml", "list", "--state", "closed")
	if r.code != exitUsage || !strings.Contains(r.stderr, `--state must be open, resolved or all, not "closed"`) {
		t.Errorf("tickets --config F list: code %d\n%s", r.code, r.stderr)
	}
}

// TestFlagsBelongToTheirCommand: a flag is taken by the commands it means
// something to; anywhere else it is a usage error that names it.
func TestFlagsBelongToTheirCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, wantErr string
		args          []string
	}{
		{desc: "outbox list takes no --by", args: []string{"outbox", "list", "--by", "alice"}, wantErr: "unknown flag: --by"},
		{desc: "outbox replay takes no --state", args: []string{"outbox", "replay", "3", "--state", "parked", "--by", "a"}, wantErr: "unknown flag: --state"},
		{desc: "outbox dismiss takes no --all-parked", args: []string{"outbox", "dismiss", "--all-parked"}, wantErr: "unknown flag: --all-parked"},
		{desc: "tickets ack takes no --outcome", args: []string{"tickets", "ack", "3", "--outcome", "done"}, wantErr: "unknown flag: --outcome"},
		{desc: "run prints no data", args: []string{"run", "--json"}, wantErr: "unknown flag: --json"},
		{desc: "--json before a command that prints no data", args: []string{"--json", "check-config"}, wantErr: "unknown flag: --json"},
		{desc: "version reads no configuration", args: []string{"version", "--config", "x.toml"}, wantErr: "unknown flag: --config"},
		{desc: "--config before the demo", args: []string{"--config", "x.toml", "demo"}, wantErr: "unknown flag: --config"},
		{desc: "bench reads no configuration", args: []string{"bench", "--config", "x.toml"}, wantErr: "unknown flag: --config"},
		{desc: "a bad value", args: []string{"demo", "--ops", "many"}, wantErr: `invalid argument "many" for "--ops" flag`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.wantErr) || r.stdout != "" {
				t.Errorf("sweeper %s: code %d, want %d with %q on stderr\nstdout: %s\nstderr: %s",
					strings.Join(tc.args, " "), r.code, exitUsage, tc.wantErr, r.stdout, r.stderr)
			}
		})
	}
}

// TestHelpStreams: help asked for goes to stdout and exits 0; after a
// mistake, the usage goes to stderr and the exit is 2; either is printed
// exactly once.
func TestHelpStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		args     []string
		wantCode int
		want     string // in the stream the usage goes to
	}{
		{desc: "--help", args: []string{"--help"}, wantCode: exitOK, want: "Available Commands:"},
		{desc: "-h", args: []string{"-h"}, wantCode: exitOK, want: "Available Commands:"},
		{desc: "help", args: []string{"help"}, wantCode: exitOK, want: "Available Commands:"},
		{desc: "help CMD", args: []string{"help", "sweep"}, wantCode: exitOK, want: "sweeper sweep --once"},
		{desc: "help of a group's command", args: []string{"help", "tickets", "resolve"}, wantCode: exitOK, want: "--outcome"},
		{desc: "CMD --help", args: []string{"outbox", "replay", "--help"}, wantCode: exitOK, want: "--all-parked"},
		{desc: "group -h", args: []string{"tickets", "-h"}, wantCode: exitOK, want: "Available Commands:"},
		{desc: "no command", args: nil, wantCode: exitUsage, want: "sweeper: missing command"},
		{desc: "a group without its command", args: []string{"outbox"}, wantCode: exitUsage, want: "sweeper outbox: missing command"},
		{desc: "unknown flag", args: []string{"sweep", "--force"}, wantCode: exitUsage, want: "sweeper sweep: unknown flag: --force"},
		{desc: "missing argument", args: []string{"tickets", "show"}, wantCode: exitUsage, want: "sweeper tickets show: need a ticket id"},
		{desc: "extra argument", args: []string{"tickets", "show", "1", "2"}, wantCode: exitUsage, want: `unexpected argument "2"`},
		{desc: "bad value", args: []string{"sweep", "--once=maybe"}, wantCode: exitUsage, want: `invalid argument "maybe" for "--once" flag`},
		{desc: "a flag's value the command refuses", args: []string{"healthcheck", "--path", "/x"}, wantCode: exitUsage, want: "--path must be"},
		{desc: "help of an unknown topic", args: []string{"help", "frobnicate"}, wantCode: exitUsage, want: `unknown help topic "frobnicate"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, tc.args...)
			usage, other := r.stdout, r.stderr
			if tc.wantCode != exitOK {
				usage, other = r.stderr, r.stdout
			}
			if r.code != tc.wantCode || !strings.Contains(usage, tc.want) || strings.Count(usage, "Usage:") != 1 || other != "" {
				t.Errorf("sweeper %s: code %d, want %d, %q and one usage in the one stream\nstdout: %s\nstderr: %s",
					strings.Join(tc.args, " "), r.code, tc.wantCode, tc.want, r.stdout, r.stderr)
			}
		})
	}
}

// TestUnknownCommandIsNamed: an unknown command is named, with cobra's
// suggestion when one is close, at the root and in a group.
func TestUnknownCommandIsNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `sweeper: unknown command "frobnicate" for "sweeper"`},
		{[]string{"tickts", "list"}, "unknown command \"tickts\" for \"sweeper\"\n\nDid you mean this?\n\ttickets\n"},
		{[]string{"tickets", "lst"}, "sweeper tickets: unknown command \"lst\" for \"sweeper tickets\"\n\nDid you mean this?\n\tlist\n"},
		{[]string{"outbox", "purge", "3"}, `unknown command "purge" for "sweeper outbox"`},
	} {
		r := runCLI(t, nil, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("sweeper %s: code %d, want %d with %q\nstdout: %s\nstderr: %s",
				strings.Join(tc.args, " "), r.code, exitUsage, tc.want, r.stdout, r.stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	flag := runCLI(t, nil, "--version")
	cmd := runCLI(t, nil, "version")
	if flag.code != exitOK || cmd.code != exitOK || flag.stdout != cmd.stdout || !strings.HasPrefix(cmd.stdout, "sweeper ") {
		t.Errorf("--version (code %d) %q, version (code %d) %q: want the same line", flag.code, flag.stdout, cmd.code, cmd.stdout)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{
		"bash": "__start_sweeper",
		"zsh":  "#compdef sweeper",
		"fish": "complete -c sweeper",
	} {
		r := runCLI(t, nil, "completion", shell)
		if r.code != exitOK || !strings.Contains(r.stdout, want) || r.stderr != "" {
			t.Errorf("completion %s: code %d, stdout lacks %q or stderr is not empty\nstderr: %s", shell, r.code, want, r.stderr)
		}
	}
	if r := runCLI(t, nil, "completion", "tcsh"); r.code != exitUsage {
		t.Errorf("completion tcsh: code %d, want %d", r.code, exitUsage)
	}
}
