package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/kinds"
)

// providerKinds is the list of adapters this build knows.
func providerKinds() providers.Kinds { return kinds.All() }

// env is what a command sees of the process: its output streams and
// environment, so tests can run commands in-process; and the global
// --config.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         config.Getenv
	// environ is the whole environment ("NAME=value"), in which a
	// SWEEPER_ variable that sets no key is a configuration error; nil
	// (in-process tests) checks none.
	environ    []string
	configPath string
	// allowNewerSchema is run's --allow-newer-schema: open a database a
	// newer sweeper migrated.
	allowNewerSchema bool
	// logLevel, when set, is the level of the logger built once the
	// configuration is read, for the daemon to change on a reload.
	logLevel *slog.LevelVar
}

// run runs the command line args with an empty stdin and returns the exit
// code. Everything a command prints goes to stdout or stderr; nothing is
// printed twice.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv config.Getenv) int {
	return runIn(ctx, args, strings.NewReader(""), stdout, stderr, getenv)
}

// runIn is run with stdin, which only `hash` reads.
func runIn(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv config.Getenv) int {
	return runEnviron(ctx, args, stdin, stdout, stderr, getenv, nil)
}

// runEnviron is runIn with the whole environment, as main runs it.
func runEnviron(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv config.Getenv, environ []string) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, environ: environ}
	root := newRootCmd(e)
	// Never nil: cobra would read os.Args instead.
	root.SetArgs(append([]string{}, args...))
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(stderr, cmd, err)
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "sweeper",
		Short: "sweeper settles uncertain side effects recorded in an operations ledger",
		Long: "sweeper settles uncertain side effects recorded in an operations ledger: it finds operations\n" +
			"left pending, asks each provider whether the effect exists, and turns what it cannot prove\n" +
			"into review tickets. It never performs an effect itself.\n\n" +
			"Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.",
		Version:       thisBuild().String(),
		SilenceErrors: true, // exitCode prints them, once
		SilenceUsage:  true,
		// Without a command there is nothing to do: a usage error, as
		// README's exit codes say.
		RunE: func(*cobra.Command, []string) error { return usagef("missing command") },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return refuseHiddenFlags(cmd)
		},
	}
	// Before the completion command, which keeps the writer it is built with.
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate("sweeper {{.Version}}\n")
	root.SetUsageTemplate(usageTemplate)
	// Listed in the usage printed after an unknown command too.
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.PersistentFlags().StringVar(&e.configPath, "config", "",
		"configuration file (default: $"+config.EnvConfig+", else ./"+config.DefaultPath+")")
	// Known to the root so that `sweeper --json tickets list` finds its
	// command; a command that prints data declares its own --json, and
	// this one, hidden, is refused by those that do not.
	root.PersistentFlags().Bool("json", false, "print JSON")
	root.PersistentFlags().Lookup("json").Hidden = true

	root.AddCommand(
		newDemoCmd(e),
		newInitCmd(e),
		newMigrateCmd(e),
		newAdoptCmd(e),
		newCheckConfigCmd(e),
		newRunCmd(e),
		newSweepCmd(e),
		newEscalateCmd(e),
		newTicketsCmd(e),
		newNotifyCmd(e),
		newOutboxCmd(e),
		newSilencesCmd(e),
		newProvidersCmd(e),
		newAuditCmd(e),
		newHealthcheckCmd(e),
		newBenchCmd(e),
		newHashCmd(e),
		newVersionCmd(e),
	)
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			// An unknown shell is a usage error, as an unknown command is.
			c.Args, c.SuggestionsMinimumDistance = subcommands, 2
			c.RunE = func(*cobra.Command, []string) error { return nil }
			for _, sub := range c.Commands() {
				noConfig(sub)
			}
		}
	}
	return root
}

// noConfig marks cmd as reading no configuration: --config is refused,
// and its help does not list it.
func noConfig(cmd *cobra.Command) {
	cmd.Flags().String("config", "", "")
	cmd.Flags().Lookup("config").Hidden = true
}

// refuseHiddenFlags refuses a global flag the command does not take: the
// hidden --json of the root, or the hidden --config of noConfig.
func refuseHiddenFlags(cmd *cobra.Command) error {
	for _, name := range []string{"config", "json"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Hidden && f.Changed {
			return usagef("unknown flag: --%s", name)
		}
	}
	return nil
}
