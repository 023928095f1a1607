package migrations_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// The tests mostly wait on the database: four at a time.
func TestMain(m *testing.M) {
	dbtest.Main(m, dbtest.Parallel(4))
}

func TestUpTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, dbtest.NewEmptyDatabase(t))
	m := migrations.New(pool, nil)

	before, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) == 0 {
		t.Fatal("no migrations known")
	}
	for _, v := range before {
		if v.Applied {
			t.Errorf("fresh database reports %s %d applied", v.Component, v.Version)
		}
	}
	// Status on a fresh database must not create anything.
	var schemas int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('sweeper', 'ledger')`).Scan(&schemas); err != nil || schemas != 0 {
		t.Fatalf("Status created %d schemas (%v)", schemas, err)
	}

	applied, err := m.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(before) {
		t.Errorf("first Up applied %d versions, want %d", len(applied), len(before))
	}
	again, err := m.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("second Up applied %v, want nothing", again)
	}
	after, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	components := map[string]int{}
	for _, v := range after {
		components[v.Component]++
		if !v.Applied {
			t.Errorf("%s %d %s still pending after Up", v.Component, v.Version, v.Name)
		}
	}
	if components[migrations.ComponentRiver] == 0 || components[migrations.ComponentSweeper] == 0 {
		t.Errorf("status components = %v, want both river and sweeper", components)
	}
	if n, err := m.Pending(ctx); err != nil || n != 0 {
		t.Errorf("Pending = %d, %v", n, err)
	}
	// River's tables are in the sweeper schema, not the search path's.
	var riverSchema string
	if err := pool.QueryRow(ctx, `SELECT table_schema FROM information_schema.tables WHERE table_name = 'river_job'`).Scan(&riverSchema); err != nil || riverSchema != migrations.Schema {
		t.Errorf("river_job in schema %q (%v), want %q", riverSchema, err, migrations.Schema)
	}
}

// TestUpConcurrent: replicas starting together on an empty database all
// succeed, and every migration is applied exactly once.
func TestUpConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewEmptyDatabase(t)
	const replicas = 4
	results := make([][]migrations.Version, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		pool := dbtest.Pool(t, url) // a pool each, as separate processes would have
		wg.Go(func() { results[i], errs[i] = migrations.New(pool, nil).Up(ctx) })
	}
	wg.Wait()
	total := 0
	for i := range replicas {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		total += len(results[i])
	}
	status, err := migrations.New(dbtest.Pool(t, url), nil).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(status) {
		t.Errorf("replicas applied %d versions in all, want %d (each exactly once)", total, len(status))
	}
}

func TestFingerprintIsStable(t *testing.T) {
	t.Parallel()
	a, err := migrations.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := migrations.Fingerprint()
	if a != b || len(a) != 64 {
		t.Errorf("fingerprints %q, %q", a, b)
	}
}
