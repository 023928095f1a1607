// Command withpg runs a command with SWEEPER_DATABASE_URL pointing at a
// PostgreSQL: the one SWEEPER_DATABASE_URL already names, else a database
// "sweeper_quickstart" on 127.0.0.1:5432, else that database in a
// throwaway cluster started with the machine's initdb/pg_ctl and removed
// afterwards. It backs `make quickstart`.
//
//	go run ./tools/withpg -- COMMAND [ARGS...]
package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/testkit/pgtemp"
)

const database = "sweeper_quickstart"

func main() { os.Exit(run()) }

func run() int {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withpg -- COMMAND [ARGS...]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	findCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	u, cluster, err := pgtemp.Find(findCtx, "SWEEPER_DATABASE_URL")
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		if errors.Is(err, pgtemp.ErrNoBinaries) {
			return 2
		}
		return 1
	}
	if cluster != nil {
		fmt.Fprintln(os.Stderr, "withpg: started a throwaway PostgreSQL:", pgtemp.Redact(u))
		defer func() {
			if err := cluster.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "withpg: stop throwaway cluster:", err)
			}
		}()
	}
	if os.Getenv("SWEEPER_DATABASE_URL") == "" {
		// The throwaway cluster's URL names its maintenance database, as
		// the local server's does: sweeper refuses that one, and rightly.
		if u, err = ensureDatabase(ctx, u); err != nil {
			fmt.Fprintln(os.Stderr, "withpg:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "withpg: using", pgtemp.Redact(u))
	}

	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "SWEEPER_DATABASE_URL="+u)
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	return 0
}

// ensureDatabase creates the quickstart database on the server at u when it
// is missing and returns its URL, so the quickstart never writes into the
// server's own databases.
func ensureDatabase(ctx context.Context, u string) (string, error) {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", database).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+database); err != nil {
			return "", fmt.Errorf("create database %s: %w", database, err)
		}
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	parsed.Path = "/" + database
	return parsed.String(), nil
}
