package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/pgtemp"
)

// clusterDatabase is the URL of a migrated database on a throwaway
// PostgreSQL cluster of the test's own ([migratedCluster]). It is for the
// long tests that run several daemons at once: their pools, eight
// connections each, would otherwise take a large share of the shared
// server's connection limit beside every other package's tests (four such
// tests at once held about 80 of its 100).
func clusterDatabase(t *testing.T) string {
	t.Helper()
	return migratedCluster(t).URL
}

// migratedCluster starts a throwaway PostgreSQL cluster for the test,
// stopped when the test ends, and migrates its database; for the tests
// that stop, restart or halt their server, and those that keep their
// connections off the shared one.
func migratedCluster(t *testing.T) *pgtemp.Cluster {
	t.Helper()
	ctx := context.Background()
	cluster, err := pgtemp.Start(ctx)
	if err != nil {
		t.Fatalf("a PostgreSQL cluster of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	pool, err := pgxpool.New(ctx, cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrations.New(pool, nil).Up(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return cluster
}
