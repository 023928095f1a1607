package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, as README documents them.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: the database, a provider, Slack
	exitUsage   = 2 // bad flags or a bad configuration
	// exitPending: migrate --status found migrations to apply.
	exitPending = 3
	// exitAhead: migrate --status found migrations this binary does not
	// know (a newer sweeper applied them).
	exitAhead = 4
)

// usageError is a mistake in the command line: it is printed with the
// command's usage, on stderr, and exits exitUsage.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// usagef returns a usageError.
func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitError ends a command with code, after "sweeper CMD: err" on stderr
// when err is not nil (nil: the command has said why itself).
type exitError struct {
	code int
	err  error
}

func (x *exitError) Error() string {
	if x.err == nil {
		return fmt.Sprintf("exit code %d", x.code)
	}
	return x.err.Error()
}

func (x *exitError) Unwrap() error { return x.err }

// configError is a bad configuration: said without the usage, exit 2.
func configError(err error) error { return &exitError{exitUsage, err} }

// exited is the exit code of a command that printed why itself.
func exited(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// runE adapts a command's work to cobra: a usageError or exitError passes
// as it is, any other error is a runtime failure.
func runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var usage usageError
		var exit *exitError
		if err == nil || errors.As(err, &usage) || errors.As(err, &exit) {
			return err
		}
		return &exitError{exitFailure, err}
	}
}

// exitCode prints err, if any, for cmd and maps it to an exit code. Every
// error that is not an exitError comes from the command line (cobra's
// unknown commands and flags, bad values, arguments) or is a usageError:
// it is printed with the command's usage, on stderr.
func exitCode(stderr io.Writer, cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var exit *exitError
	if errors.As(err, &exit) {
		if exit.err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", cmd.CommandPath(), inertLines(exit.err.Error()))
		}
		return exit.code
	}
	fmt.Fprintf(stderr, "%s: %s\n\n", cmd.CommandPath(), inertLines(strings.TrimRight(err.Error(), "\n")))
	fmt.Fprint(stderr, cmd.UsageString())
	return exitUsage
}

// noArgs refuses positional arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// subcommands is the Args of a command that only groups others: an
// argument is an unknown subcommand, named with cobra's suggestions, and
// no argument at all a usage error.
func subcommands(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usagef("missing command")
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t")
	}
	return usageError{msg}
}

// group returns a command that only groups subs.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  subcommands,
		// cobra's default for the root's unknown commands.
		SuggestionsMinimumDistance: 2,
		RunE:                       func(*cobra.Command, []string) error { return nil }, // Args has refused
	}
	cmd.AddCommand(subs...)
	return cmd
}
