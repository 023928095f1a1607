// Command sweeper settles uncertain side effects: it finds ledger operations
// left pending, asks each provider whether the effect exists, and turns what
// it cannot prove into review tickets. It never performs an effect itself.
//
// Usage:
//
//	sweeper [command] [flags]
//
// Commands: demo, migrate, check-config, run, sweep, escalate, tickets,
// notify, outbox, providers, healthcheck, bench, hash, version, completion;
// "sweeper help" describes them, "sweeper help COMMAND" or "sweeper
// COMMAND --help" one of them and its flags. --config works before or
// after the command. Exit codes: 0 success, 1 runtime failure, 2 usage or
// configuration error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runEnviron(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, os.Environ())
	stop()
	os.Exit(code)
}
