package pgtemp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/sweeper/sweeper/testkit/pgtemp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartAndStop starts a real throwaway cluster with the machine's
// initdb/pg_ctl, connects, and checks Stop removes it. It fails (never
// skips) where the binaries are missing: the tests and the quickstart rely
// on them when no server runs.
func TestStartAndStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtemp.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgtemp.Ping(ctx, c.URL); err != nil {
		c.Stop()
		t.Fatalf("throwaway cluster does not answer: %v", err)
	}
	dir := filepath.Dir(c.LogFile())
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the cluster's directory: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := pgtemp.Ping(ctx, c.URL); err == nil {
		t.Error("cluster still answers after Stop")
	}
	// Other tests start and stop clusters of their own meanwhile: look at
	// this one's directory only.
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left the cluster's directory %s (stat: %v)", dir, err)
	}
}

func TestFindPrefersTheEnvironment(t *testing.T) {
	t.Setenv("SWEEPER_PGTEMP_TEST_URL", "postgres://nobody@127.0.0.1:1/x?connect_timeout=1")
	_, c, err := pgtemp.Find(context.Background(), "SWEEPER_PGTEMP_TEST_URL")
	if err == nil || c != nil {
		t.Fatalf("Find with an unreachable URL in the environment = %v, %v; want an error and no cluster", c, err)
	}
}

// TestHaltResumeRestart: a halted server refuses connections and keeps its
// data; it comes back on the same URL, after a fast and after an immediate
// (crash-like) shutdown, every acknowledged commit kept once the database
// commits synchronously.
func TestHaltResumeRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgtemp.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, c.URL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(`ALTER DATABASE ` + pgtemp.Database + ` SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	if err := exec(`CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := c.Halt(ctx, pgtemp.ShutdownFast); err != nil {
		t.Fatal(err)
	}
	if err := pgtemp.Ping(ctx, c.URL); err == nil {
		t.Fatal("a halted cluster answers")
	}
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := exec(`INSERT INTO kept VALUES (2)`); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	if err := c.Restart(ctx, pgtemp.ShutdownImmediate); err != nil {
		t.Fatal(err)
	}
	if err := exec(`DO $$ BEGIN IF (SELECT count(*) FROM kept) <> 2 THEN RAISE 'rows lost'; END IF; END $$`); err != nil {
		t.Fatalf("after an immediate restart: %v", err)
	}
	if err := c.Halt(ctx, "smart"); err == nil {
		t.Error("Halt accepted an unknown mode")
	}
	if data, err := os.ReadFile(c.LogFile()); err != nil || len(data) == 0 {
		t.Errorf("server log %s: %v, %d bytes", c.LogFile(), err, len(data))
	}
}

// TestMalformedURLNotQuoted: a URL that does not parse cleanly — here a
// password holding an unescaped / or # — is neither shown by Redact nor
// handed to pgx, whose error would quote it.
func TestMalformedURLNotQuoted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ desc, url string }{
		{"slash after digits", "postgres://app:4567/Pa55Qz@127.0.0.1:1/x"},
		{"hash after digits", "postgres://app:12#Pa55Qz@127.0.0.1:1/x"},
		{"at sign", "postgres://app:Pa55@Qz@127.0.0.1:1/x"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			if got := pgtemp.Redact(c.url); strings.Contains(got, "Pa55") || strings.Contains(got, "Qz") {
				t.Errorf("Redact = %q", got)
			}
			err := pgtemp.Ping(context.Background(), c.url)
			if err == nil || strings.Contains(err.Error(), "Pa55") || strings.Contains(err.Error(), "Qz") {
				t.Errorf("Ping: %v", err)
			}
		})
	}
}
