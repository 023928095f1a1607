package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/safetext"
)

// loadConfig resolves the configuration file — --config, else
// $SWEEPER_CONFIG, else ./sweeper.toml — and loads it, every provider's
// credentials required. A missing or bad file is a configError listing
// every problem.
func loadConfig(e *env) (*config.Config, string, error) {
	return loadConfigWith(e, config.Options{})
}

// uses says what a command reads beyond its database and configuration:
// the secrets of what it does not use need not be set (their names are
// still checked), so a migration job or a laptop listing tickets needs no
// Slack signing secret.
type uses struct {
	// lookups: it asks providers (their credentials).
	lookups bool
	// slack: it posts to Slack (SLACK_BOT_TOKEN).
	slack bool
	// interactivity: it serves Slack's button clicks (SLACK_SIGNING_SECRET).
	interactivity bool
	// riverUI: it serves River's UI (its basic-auth credentials).
	riverUI bool
	// web: it serves the review page (its cookie key).
	web bool
}

// usesAll is what `run` and `check-config` read: everything.
var usesAll = uses{lookups: true, slack: true, interactivity: true, riverUI: true, web: true}

// loadConfigFor is loadConfig for a command that reads only what u says.
func loadConfigFor(e *env, u uses) (*config.Config, string, error) {
	return loadConfigWith(e, config.Options{NoLookups: !u.lookups, NoSlack: !u.slack,
		NoInteractivity: !u.interactivity, NoRiverUI: !u.riverUI, NoWeb: !u.web})
}

func loadConfigWith(e *env, opts config.Options) (*config.Config, string, error) {
	path := e.configPath
	if path == "" {
		path = e.getenv(config.EnvConfig)
	}
	if path == "" {
		path = config.DefaultPath
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, path, configError(fmt.Errorf("no configuration: ./%s does not exist; pass --config FILE or set %s "+
				"(sweeper init writes a starter; config.example.toml documents every key)", config.DefaultPath, config.EnvConfig))
		}
	}
	opts.Environ = e.environ
	cfg, err := config.LoadWith(path, providerKinds(), e.getenv, opts)
	if err != nil {
		var cfgErr *config.Error
		if errors.As(err, &cfgErr) {
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %d problem(s):", path, len(cfgErr.Problems))
			for _, p := range cfgErr.Problems {
				fmt.Fprintf(&b, "\n  %s", p)
			}
			return nil, path, configError(errors.New(b.String()))
		}
		return nil, path, configError(fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "open "+path+": ")))
	}
	return cfg, path, nil
}

// jsonFlag adds --json to a command that prints data.
func jsonFlag(cmd *cobra.Command, usage string) *bool {
	return cmd.Flags().Bool("json", false, usage)
}

// printJSON prints v as a command's --json output.
func printJSON(e *env, v any) error {
	return writeJSON(e.stdout, "", v)
}

// writeJSON is how sweeper prints JSON: indented, each line after the first
// starting with prefix, ending in a newline, and with <, > and & as they
// are. The output goes to terminals and pipes, never into HTML, and a Slack
// mention must read <@U…>, not \u003c@U…\u003e. No character a terminal
// acts on is printed raw ([safetext.InertJSON]).
func writeJSON(w io.Writer, prefix string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(safetext.InertJSON(buf.Bytes()))
	return err
}

// inert is text from outside sweeper — a provider's error, a person's
// note, a Slack error code — as a terminal may show it: one line,
// [safetext.Printable].
func inert(s string) string { return safetext.Printable(s) }

// inertLines is [inert] for a text whose line breaks are sweeper's own (a
// joined error, a list of problems, cobra's "Did you mean this?" list):
// each line is made inert, the breaks and each line's leading tabs stay.
func inertLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		rest := strings.TrimLeft(l, "\t")
		lines[i] = l[:len(l)-len(rest)] + inert(rest)
	}
	return strings.Join(lines, "\n")
}

// passFailed prints the one line that says what went wrong in a --once
// pass — every problem, joined — and returns an exitFailure: a script or
// a cron job reads the exit code, a person this line.
func passFailed(problems []string) error {
	text := strings.Join(problems, "; ")
	// A joined error has a line per error; the summary stays one line.
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
	return &exitError{exitFailure, fmt.Errorf("the pass had errors: %s", text)}
}

// idArg reads the one ticket or row id a command takes.
func idArg(what, arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("need a %s id (a positive number), got %q", what, arg)
	}
	return id, nil
}

// oneTicketID is the Args of a command that takes one ticket id, before,
// between or after its flags.
func oneTicketID(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return usagef("need a ticket id")
	case len(args) > 1:
		return usagef("unexpected argument %q", args[1])
	}
	_, err := idArg("ticket", args[0])
	return err
}
