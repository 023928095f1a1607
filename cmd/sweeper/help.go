package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() {
	cobra.AddTemplateFunc("flagUsages", flagUsages)
}

// flagUsages is pflag's FlagUsages with a boolean flag shown as --json,
// not --json[=true|false]: pflag 1.1 writes that for every flag whose
// value says IsBoolFlag, though the value is optional and the plain
// switch is how a person writes it. The flags are copied, each boolean
// value behind a wrapper without IsBoolFlag; fs is left as it is.
func flagUsages(fs *pflag.FlagSet) string {
	plain := pflag.NewFlagSet("", pflag.ContinueOnError)
	plain.SortFlags = fs.SortFlags
	fs.VisitAll(func(f *pflag.Flag) {
		c := *f
		if f.Value.Type() == "bool" {
			c.Value = plainBool{f.Value}
		}
		plain.AddFlag(&c)
	})
	return plain.FlagUsages()
}

// plainBool is a boolean flag's value without its IsBoolFlag method.
type plainBool struct{ pflag.Value }

// usageTemplate is cobra's, but a command that groups others (the root,
// tickets, outbox) shows no usage line of its own: it runs only to refuse.
const usageTemplate = `Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{flagUsages .LocalFlags | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{flagUsages .InheritedFlags | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`

// newHelpCmd is cobra's `help [command]`, but an unknown topic is a usage
// error instead of a success.
func newHelpCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return usagef("unknown help topic %q", strings.Join(args, " "))
			}
			return target.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := c.Root().Find(args)
			if err != nil || target == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
	noConfig(cmd)
	return cmd
}
