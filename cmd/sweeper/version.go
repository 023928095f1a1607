package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module and VCS information Go embeds.
var version = ""

func runVersion(_ context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "version", "version")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	fmt.Fprintln(e.stdout, "sweeper", versionString())
	return exitOK
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
