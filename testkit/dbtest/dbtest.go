// Package dbtest gives each test isolated state on a real PostgreSQL.
//
// The server is found once per test binary: SWEEPER_TEST_DATABASE_URL (a
// postgres:// URL to any database the user may create databases from), else
// postgres://127.0.0.1:5432/postgres, else a throwaway cluster started with
// the machine's initdb/pg_ctl. When none can be had the test fails with what
// to do — it never skips.
//
// A template database, migrated once and named after the migrations'
// fingerprint, is shared by every package's tests. [Tx] gives a transaction
// that is rolled back (the fast path); [NewDatabase] clones the template into
// a database of the test's own, for tests that commit, use several
// connections or start processes.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/pgtemp"
)

// EnvURL names the variable that points the tests at a server.
const EnvURL = "SWEEPER_TEST_DATABASE_URL"

// templateLockID serialises template creation across concurrently running
// test binaries.
const templateLockID int64 = 0x5d0f3c6b9a2e4472

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error
	cluster    *pgtemp.Cluster

	sharedOnce sync.Once
	sharedPool *pgxpool.Pool
	sharedErr  error
)

// Main runs a package's tests, then runs the cleanups opts give, stops a
// throwaway cluster if one was started, drops the package's shared
// database and checks for leaked goroutines. Call it from TestMain:
//
//	func TestMain(m *testing.M) { dbtest.Main(m) }
//	func TestMain(m *testing.M) { dbtest.Main(m, dbtest.Parallel(4)) }
func Main(m *testing.M, opts ...Option) {
	var o mainOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.parallel > 0 {
		defaultParallel(o.parallel)
	}
	code := m.Run()
	for _, f := range o.cleanups {
		f()
	}
	if sharedPool != nil {
		sharedPool.Close()
		dropShared()
	}
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest: stop throwaway cluster:", err)
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: goroutines left running after the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// An Option changes how [Main] runs a package's tests.
type Option func(*mainOptions)

type mainOptions struct {
	parallel int
	cleanups []func()
}

// Parallel makes n the number of parallel tests the package runs at once
// (go test's -parallel, GOMAXPROCS by default) unless the command line sets
// -parallel. It is for packages whose tests mostly wait — on processes,
// leases, timers and the database — rather than compute.
func Parallel(n int) Option { return func(o *mainOptions) { o.parallel = n } }

// Cleanup runs f once the package's tests are done.
func Cleanup(f func()) Option { return func(o *mainOptions) { o.cleanups = append(o.cleanups, f) } }

func defaultParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		fmt.Fprintln(os.Stderr, "dbtest: -parallel:", err)
		os.Exit(2)
	}
}

// ServerURL returns the URL of the server the tests use, finding or
// starting it on first call.
func ServerURL(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		if serverURL, serverErr = findServer(); serverErr == nil {
			dropAbandoned(serverURL, time.Now())
		}
	})
	if serverErr != nil {
		t.Fatalf("dbtest: no PostgreSQL for the tests: %v", serverErr)
	}
	return serverURL
}

func findServer() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	u, c, err := pgtemp.Find(ctx, EnvURL)
	if err != nil {
		return "", fmt.Errorf("%w\nSet %s to a server's URL, start PostgreSQL on 127.0.0.1:5432, "+
			"or install the server binaries (Debian: apt-get install postgresql)", err, EnvURL)
	}
	cluster = c
	return u, nil
}

// withDatabase returns u pointing at database name.
func withDatabase(u, name string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		panic(fmt.Sprintf("dbtest: %s must be a postgres:// URL: %v", EnvURL, err))
	}
	parsed.Path = "/" + name
	return parsed.String()
}

// TemplateName returns the migrated template database, creating it on first
// use. Its name carries the migrations' fingerprint, so a changed migration
// gets a fresh template.
func TemplateName(t testing.TB) string {
	t.Helper()
	fp, err := migrations.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	name := "sweeper_tmpl_" + fp[:16]
	if err := ensureTemplate(ServerURL(t), name); err != nil {
		t.Fatalf("dbtest: template database: %v", err)
	}
	return name
}

func ensureTemplate(server, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockID); err != nil {
		return err
	}
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	// Build under another name and rename, so a half-built template (a
	// killed test run) is never cloned.
	building := name + "_building"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, fastCommits(building)); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, withDatabase(server, building))
	if err != nil {
		return err
	}
	_, err = migrations.New(pool, nil).Up(ctx)
	pool.Close()
	if err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return err
	}
	return nil
}

// NewDatabase clones the migrated template into a database of the test's
// own and returns its URL. The database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return createDatabase(t, TemplateName(t))
}

// NewEmptyDatabase creates an unmigrated database of the test's own and
// returns its URL; it is dropped when the test ends.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	return createDatabase(t, "")
}

func createDatabase(t testing.TB, template string) string {
	t.Helper()
	server := ServerURL(t)
	name := "sweeper_test_" + randomSuffix()
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + template
	}
	if err := adminExec(server, stmt, fastCommits(name)); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() {
		if err := adminExec(server, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: %v", err)
		}
	})
	return withDatabase(server, name)
}

// fastCommits is the statement that makes the test database name commit
// without waiting for its WAL to reach the disk (synchronous_commit =
// off, for every session on it, the daemons' included). Only a crash of
// the server could tell the difference — the last commits before it lost,
// never a transaction half applied — and the tests never crash the server
// their databases live on: those that restart or kill PostgreSQL start a
// cluster of their own (testkit/pgtemp), and set synchronous_commit back
// on where a commit must survive the restart (the chaos test). A commit
// then takes a tenth of a millisecond instead of the disk's flush (about
// 2 ms here), which most of the tests' statements are.
func fastCommits(name string) string {
	return "ALTER DATABASE " + name + " SET synchronous_commit = off"
}

// adminExec runs statements on a connection of its own: CREATE and DROP
// DATABASE cannot run in a pool's transaction or share a session.
func adminExec(server string, stmts ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	for _, stmt := range stmts {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// NewPool clones a database for the test (see [NewDatabase]) and returns a
// pool on it, closed when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Pool(t, NewDatabase(t))
}

// Pool opens a pool on u, closed when the test ends.
func Pool(t testing.TB, u string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Tx begins a transaction on a database shared by the package's tests and
// rolls it back when the test ends, so nothing a test writes is seen by
// another.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	sharedOnce.Do(func() {
		var u string
		u, sharedErr = cloneShared(t)
		if sharedErr == nil {
			sharedPool, sharedErr = pgxpool.New(context.Background(), u)
		}
	})
	if sharedErr != nil {
		t.Fatalf("dbtest: shared database: %v", sharedErr)
	}
	tx, err := sharedPool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tx.Rollback(context.Background()); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Errorf("dbtest: rollback: %v", err)
		}
	})
	return tx
}

// cloneShared clones the template for the package's shared pool; Main drops
// it when the package's tests are done.
func cloneShared(t testing.TB) (string, error) {
	server, tmpl := ServerURL(t), TemplateName(t)
	name := "sweeper_shared_" + randomSuffix()
	if err := adminExec(server, "CREATE DATABASE "+name+" TEMPLATE "+tmpl, fastCommits(name)); err != nil {
		return "", err
	}
	sharedDatabases = append(sharedDatabases, name)
	return withDatabase(server, name), nil
}

var sharedDatabases []string

func dropShared() {
	for _, name := range sharedDatabases {
		if err := adminExec(serverURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
		}
	}
}

// randomSuffix names a test database: when it was made (Unix seconds) and
// six random bytes, so that [dropAbandoned] can tell a database a killed
// run left behind.
func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return strconv.FormatInt(time.Now().Unix(), 10) + "_" + hex.EncodeToString(b)
}

// abandonedAfter is the age past which a test database nobody is connected
// to was left behind: no test binary runs that long (make test's -timeout
// is 20 minutes, the longest of make long's runs about 10).
const abandonedAfter = 2 * time.Hour

// abandoned matches the names of the databases [randomSuffix] names.
var abandoned = regexp.MustCompile(`^sweeper_(test|shared)_([0-9]{9,12})_[0-9a-f]{12}$`)

// dropAbandoned drops, on server, the test databases that runs killed
// before their cleanups (a panic, a timeout, ^C) left behind: those made
// more than [abandonedAfter] before now, and only while nobody is
// connected to them (no FORCE). What it cannot drop it leaves; a failure
// here fails no test.
func dropAbandoned(server string, now time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'sweeper\_%'`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		m := abandoned.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		made, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil || now.Sub(time.Unix(made, 0)) < abandonedAfter {
			continue
		}
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			fmt.Fprintf(os.Stderr, "dbtest: left %s, made %s: %v\n", name, time.Unix(made, 0).UTC().Format(time.RFC3339), err)
		}
	}
}
