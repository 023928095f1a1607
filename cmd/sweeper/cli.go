package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/kinds"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: the database, a provider, Slack
	exitUsage   = 2 // bad flags or a bad configuration
)

// providerKinds is the list of adapters this build knows.
func providerKinds() []providers.Kind { return kinds.All() }

// env is what a command sees of the process: its output streams and
// environment, so tests can run commands in-process.
type env struct {
	stdout, stderr io.Writer
	getenv         config.Getenv
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	// run parses args itself (each command owns its flags) and returns the
	// exit code.
	run func(ctx context.Context, e *env, args []string) int
}

func commands() []command {
	return []command{
		{"demo", "see it work: a seeded ledger, the daemon, simulated providers and a fake Slack, no setup", runDemo},
		{"migrate", "apply River's and sweeper's database migrations (--status lists them)", runMigrate},
		{"check-config", "validate the configuration and print it with secrets masked", runCheckConfig},
		{"run", "run the daemon: scheduled sweeps and lookups, until SIGINT or SIGTERM", runDaemon},
		{"sweep", "sweep --once: one full pass of scan, lookups and decisions, then exit", runSweep},
		{"escalate", "escalate --once: look up and escalate every ticket past its deadline, then exit", runEscalate},
		{"tickets", "tickets list | show ID | resolve ID | ack ID: review tickets and people's decisions", runTickets},
		{"notify", "notify --once: deliver the outbox (review alerts) to Slack, then exit", runNotify},
		{"outbox", "outbox list | replay ID... | dismiss ID...: the Slack outbox, parked rows included", runOutbox},
		{"providers", "each provider's health (up, or down for the cluster and since when), and what waits on it", runProviders},
		{"healthcheck", "ask the local daemon's /healthz (for container health checks)", runHealthcheck},
		{"bench", "bench: measure settle throughput, latency, statements, memory and the idle scan on a scratch database", runBench},
		{"version", "print the version", runVersion},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv config.Getenv) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: getenv}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(stderr, "sweeper: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, "sweeper settles uncertain side effects recorded in an operations ledger.\n\n")
	fmt.Fprint(w, "Usage: sweeper <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'sweeper <command> --help' for a command's flags.\n")
	fmt.Fprint(w, "Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.\n")
}

// newFlagSet returns a flag set for a command, printing its usage to the
// right stream: stdout for --help, stderr for a mistake.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: sweeper %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and maps the outcome to an exit code: -1 to go on,
// exitOK after --help, exitUsage after a mistake.
func parseFlags(e *env, fs *flag.FlagSet, args []string) int {
	// flag prints the usage itself on --help and on a mistake; printing it
	// here instead sends it once, to stdout for --help.
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(e.stdout)
		fs.Usage()
		return exitOK
	case err != nil:
		fs.Usage() // after the error flag printed
		return exitUsage
	case fs.NArg() > 0:
		fmt.Fprintf(e.stderr, "sweeper %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	return -1
}

// configFlag adds --config to fs.
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "configuration file (default: $"+config.EnvConfig+", else ./"+config.DefaultPath+")")
}

// loadConfig resolves the configuration file — --config, else
// $SWEEPER_CONFIG, else ./sweeper.toml — and loads it, every provider's
// credentials required. Problems are printed, one per line, and reported
// as exitUsage.
func loadConfig(e *env, flagPath string) (*config.Config, string, int) {
	return loadConfigWith(e, flagPath, config.Options{})
}

// loadConfigNoLookups is loadConfig for a command that never calls a
// provider: the providers' credentials need not be set.
func loadConfigNoLookups(e *env, flagPath string) (*config.Config, string, int) {
	return loadConfigWith(e, flagPath, config.Options{NoLookups: true})
}

func loadConfigWith(e *env, flagPath string, opts config.Options) (*config.Config, string, int) {
	path := flagPath
	if path == "" {
		path = e.getenv(config.EnvConfig)
	}
	if path == "" {
		path = config.DefaultPath
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(e.stderr, "sweeper: no configuration: ./%s does not exist; pass --config FILE or set %s "+
				"(config.example.toml documents every key)\n", config.DefaultPath, config.EnvConfig)
			return nil, path, exitUsage
		}
	}
	cfg, err := config.LoadWith(path, providerKinds(), e.getenv, opts)
	if err != nil {
		var cfgErr *config.Error
		if errors.As(err, &cfgErr) {
			fmt.Fprintf(e.stderr, "sweeper: %s: %d problem(s):\n", path, len(cfgErr.Problems))
			for _, p := range cfgErr.Problems {
				fmt.Fprintf(e.stderr, "  %s\n", p)
			}
		} else {
			fmt.Fprintf(e.stderr, "sweeper: %s: %s\n", path, strings.TrimPrefix(err.Error(), "open "+path+": "))
		}
		return nil, path, exitUsage
	}
	return cfg, path, -1
}

// printJSON prints v as a command's --json output, and returns exitOK or,
// when v cannot be encoded, exitFailure after saying why.
func printJSON(e *env, v any) int {
	if err := writeJSON(e.stdout, "", v); err != nil {
		fmt.Fprintf(e.stderr, "sweeper: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// writeJSON is how sweeper prints JSON: indented, each line after the first
// starting with prefix, ending in a newline, and with <, > and & as they
// are. The output goes to terminals and pipes, never into HTML, and a Slack
// mention must read <@U…>, not \u003c@U…\u003e.
func writeJSON(w io.Writer, prefix string, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	return enc.Encode(v)
}

// passFailed prints the one line that says what went wrong in a --once
// pass — every problem, joined — and returns exitFailure: a script or a
// cron job reads the exit code, a person this line.
func passFailed(e *env, name string, problems []string) int {
	text := strings.Join(problems, "; ")
	// A joined error has a line per error; the summary stays one line.
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
	fmt.Fprintf(e.stderr, "sweeper %s: the pass had errors: %s\n", name, text)
	return exitFailure
}

// newLogger logs text to a terminal and JSON anywhere else (a container's
// log collector, a file).
func newLogger(w io.Writer) *slog.Logger { return newLoggerAt(w, slog.LevelInfo) }

// newLoggerAt is newLogger from level up.
func newLoggerAt(w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
