package main

import (
	"context"
	"fmt"
)

func runCheckConfig(_ context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "check-config", "check-config [--config FILE]")
	configPath := configFlag(fs)
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	cfg, path, code := loadConfig(e, *configPath)
	if cfg == nil {
		return code
	}
	fmt.Fprintf(e.stdout, "# %s is valid. Effective configuration (defaults applied, secrets masked):\n\n", path)
	if err := cfg.WriteTOML(e.stdout, e.getenv); err != nil {
		fmt.Fprintf(e.stderr, "sweeper check-config: %v\n", err)
		return exitFailure
	}
	return exitOK
}
