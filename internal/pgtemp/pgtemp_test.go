package pgtemp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sweeper/sweeper/internal/pgtemp"
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
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "sweeper-pg-*"))
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := pgtemp.Ping(ctx, c.URL); err == nil {
		t.Error("cluster still answers after Stop")
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "sweeper-pg-*"))
	if len(after) >= len(dirs) {
		t.Errorf("Stop left the cluster's directory: %v", after)
	}
}

func TestFindPrefersTheEnvironment(t *testing.T) {
	t.Setenv("SWEEPER_PGTEMP_TEST_URL", "postgres://nobody@127.0.0.1:1/x?connect_timeout=1")
	_, c, err := pgtemp.Find(context.Background(), "SWEEPER_PGTEMP_TEST_URL")
	if err == nil || c != nil {
		t.Fatalf("Find with an unreachable URL in the environment = %v, %v; want an error and no cluster", c, err)
	}
}
