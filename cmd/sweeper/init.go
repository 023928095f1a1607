package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/config"
)

// starterConfig is what `sweeper init` writes: the keys that must be
// chosen, each a [config.Placeholder] the configuration refuses until it
// is set, so that the file cannot run as written.
//
//go:embed init.toml
var starterConfig string

// newInitCmd is `sweeper init`: a first configuration that refuses to run
// until its database, owner and provider are chosen.
func newInitCmd(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "write a starter configuration that runs once its placeholders are set",
		Long: "init writes a starter configuration to ./" + config.DefaultPath + " (or --output FILE; - for stdout): the\n" +
			"database, the owner of review tickets and one provider, each a CHANGE-ME placeholder that\n" +
			"check-config and every other command refuse, by key, until it is set in the file or the\n" +
			"environment. It never overwrites a file. config.example.toml documents every other key.",
		Args: noArgs,
		RunE: runE(func(*cobra.Command, []string) error {
			if output == "-" {
				_, err := fmt.Fprint(e.stdout, starterConfig)
				return err
			}
			// O_EXCL: a file that exists, or appears meanwhile, is kept.
			f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return configError(fmt.Errorf("%s exists; init never overwrites a configuration: move it away or pass --output OTHER-FILE", output))
			}
			if err != nil {
				return err
			}
			if _, err := f.WriteString(starterConfig); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "wrote %s. Before sweeper runs, set these (in the file, or in the variable named):\n", output)
			// What is left to set is what the configuration refuses: one
			// list, the one check-config prints.
			_, err = config.Parse(starterConfig, providerKinds(), func(string) string { return "" })
			if cfgErr, ok := errors.AsType[*config.Error](err); ok {
				for _, p := range cfgErr.Problems {
					fmt.Fprintf(e.stdout, "  %s\n", p)
				}
			}
			fmt.Fprintf(e.stdout, "then check it with: sweeper check-config --config %s\n", output)
			return nil
		}),
	}
	cmd.Flags().StringVar(&output, "output", config.DefaultPath, "where to write the configuration (- for stdout)")
	noConfig(cmd)
	return cmd
}
