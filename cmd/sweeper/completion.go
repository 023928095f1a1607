package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// enumFlag makes the shell complete flag name of cmd with values, and
// never with file names: every value but these is refused anyway.
func enumFlag(cmd *cobra.Command, name string, values ...string) {
	must(cmd.RegisterFlagCompletionFunc(name,
		func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var match []cobra.Completion
			for _, v := range values {
				if strings.HasPrefix(v, toComplete) {
					match = append(match, v)
				}
			}
			return match, cobra.ShellCompDirectiveNoFileComp
		}))
}

// textFlags makes the shell complete the named flags of cmd with nothing:
// they take a name, a note, an id, never a file.
func textFlags(cmd *cobra.Command, names ...string) {
	for _, name := range names {
		must(cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions))
	}
}

// must panics on a completion registered twice or for a flag that does
// not exist: a mistake in sweeper's own code, found by any test that
// builds the commands.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
