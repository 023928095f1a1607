package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module and VCS information Go embeds.
var version = ""

// newVersionCmd is `sweeper version`, which prints what `sweeper
// --version` prints.
func newVersionCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(e.stdout, "sweeper", versionString())
			return nil
		},
	}
	noConfig(cmd)
	return cmd
}

// serviceVersion is the version alone, as traces' service.version: the
// one set at build time, else the module's.
func serviceVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Main.Version
	}
	return ""
}

func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return version + " (no build info)"
	}
	v := version
	if v == "" {
		v = info.Main.Version
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	out := v
	if revision != "" {
		out += " (" + revision + modified + ")"
	}
	return out + " " + info.GoVersion
}
