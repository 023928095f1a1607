// Package pgtemp starts a throwaway PostgreSQL cluster with the machine's
// own initdb and pg_ctl, for tests and the demo on a machine with no server.
package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/config"
)

// ErrNoBinaries means initdb and pg_ctl were not found. Its message says
// what to install.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found: " +
	"install them (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql) " +
	"or point SWEEPER_DATABASE_URL / SWEEPER_TEST_DATABASE_URL at a running server")

// Cluster is a running throwaway cluster. Stop removes it.
type Cluster struct {
	// URL connects to the cluster's database [Database] as its superuser.
	URL string

	dir    string
	binDir string
	runAs  string // set when running as root: initdb refuses root
	opts   string // the server's options, to start it again as it was
}

// EnvBinDir names a variable that, when set, is the one directory
// FindBinaries looks in: for server binaries off PATH and outside Debian's
// layout, and for checking what happens where there are none.
const EnvBinDir = "SWEEPER_PG_BINDIR"

// FindBinaries returns the directory holding initdb and pg_ctl: $EnvBinDir
// when set, else from PATH, else the newest /usr/lib/postgresql/*/bin
// (Debian keeps them off PATH).
func FindBinaries() (string, error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		for _, tool := range []string{"initdb", "pg_ctl"} {
			if info, err := os.Stat(filepath.Join(dir, tool)); err != nil || info.IsDir() {
				return "", ErrNoBinaries
			}
		}
		return dir, nil
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(initdb)
		if _, err := exec.LookPath(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start initialises a cluster in a new temporary directory and starts it on
// a free loopback port, with durability off (it is thrown away). When the
// process runs as root, the server runs as the unprivileged user "postgres"
// (or "nobody"), since PostgreSQL refuses to run as root.
func Start(ctx context.Context) (*Cluster, error) {
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sweeper-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, binDir: binDir}
	if os.Geteuid() == 0 {
		if err := c.dropRoot(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}

	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	c.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off "+
		"-c synchronous_commit=off -c full_page_writes=off -c max_connections=300", port, dir)
	if err := c.start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A database of its own: sweeper refuses the maintenance database
	// postgres as a ledger, as it should refuse a user's.
	if err := createDatabase(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), Database); err != nil {
		c.Stop() //nolint:errcheck // the error that matters is the creation's
		return nil, err
	}
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, Database)
	return c, nil
}

// createDatabase creates database name on the server that maintenanceURL
// reaches.
func createDatabase(ctx context.Context, maintenanceURL, name string) error {
	conn, err := pgx.Connect(ctx, maintenanceURL)
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// Database is the database a started cluster's URL names.
const Database = "sweeper"

// LocalURL is where a developer machine's PostgreSQL usually listens.
const LocalURL = "postgres://127.0.0.1:5432/postgres?sslmode=disable"

// Find returns a server to use: the URL in the environment variable envURL
// when set (it must answer), else [LocalURL] when it answers, else a
// throwaway cluster started here (returned, for the caller to Stop). Its
// error says what was tried and what to do.
func Find(ctx context.Context, envURL string) (string, *Cluster, error) {
	if u := os.Getenv(envURL); u != "" {
		if err := Ping(ctx, u); err != nil {
			return "", nil, fmt.Errorf("%s=%s: %w", envURL, Redact(u), err)
		}
		return u, nil, nil
	}
	localErr := Ping(ctx, LocalURL)
	if localErr == nil {
		return LocalURL, nil, nil
	}
	c, err := Start(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("no PostgreSQL: %s is not set, %s does not answer (%v), "+
			"and no throwaway cluster could be started: %w", envURL, LocalURL, localErr, err)
	}
	return c.URL, c, nil
}

// Ping connects to u and disconnects, within three seconds. A URL that
// does not parse cleanly ([config.CheckDatabaseURL]) is refused unseen by
// pgx, which would quote it, redacted on a best-effort basis only, and
// might look part of its password up as a host name.
func Ping(ctx context.Context, u string) error {
	if err := config.CheckDatabaseURL(u); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// Redact masks the password in a URL for messages. A URL that does not
// parse cleanly is not shown at all: where its password ends is a guess.
func Redact(u string) string {
	if config.CheckDatabaseURL(u) != nil {
		return "(a URL that does not parse)"
	}
	if parsed, err := url.Parse(u); err == nil {
		return parsed.Redacted()
	}
	return "(unparsable URL)"
}

// Stop stops the server immediately and removes its directory.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	rmErr := os.RemoveAll(c.dir)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return rmErr
}

// start starts the server on the cluster's data directory, with the
// options it was first started with, and waits until it accepts
// connections.
func (c *Cluster) start(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-o", c.opts,
		"-l", c.LogFile(), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(c.LogFile())
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	return nil
}

// Shutdown modes for [Cluster.Halt] and [Cluster.Restart], as pg_ctl names
// them: fast rolls back open transactions and closes every connection;
// immediate kills the server's processes as a crash would, and the next
// start recovers from the write-ahead log. The cluster runs with
// synchronous_commit off, so an immediate shutdown may lose the last
// commits, as a crash of such a server would; a test that needs every
// acknowledged commit to survive sets synchronous_commit = on for its
// database (ALTER DATABASE … SET synchronous_commit = on).
const (
	ShutdownFast      = "fast"
	ShutdownImmediate = "immediate"
)

// Halt stops the server in mode ([ShutdownFast] or [ShutdownImmediate])
// and keeps its data: [Cluster.Resume] starts it again on the same port.
// Clients see their connections closed and new ones refused meanwhile.
func (c *Cluster) Halt(ctx context.Context, mode string) error {
	if mode != ShutdownFast && mode != ShutdownImmediate {
		return fmt.Errorf("pgtemp: halt: unknown shutdown mode %q", mode)
	}
	if out, err := c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", mode, "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w\n%s", mode, err, out)
	}
	return nil
}

// Resume starts a halted server again, with its data, on the same port,
// and returns once it accepts connections.
func (c *Cluster) Resume(ctx context.Context) error { return c.start(ctx) }

// Restart halts the server in mode and resumes it: what a database
// failover or a maintenance restart looks like to its clients.
func (c *Cluster) Restart(ctx context.Context, mode string) error {
	if err := c.Halt(ctx, mode); err != nil {
		return err
	}
	return c.Resume(ctx)
}

// LogFile is the server's log, for a test to read what the server saw.
func (c *Cluster) LogFile() string { return filepath.Join(c.dir, "server.log") }

// dropRoot picks the unprivileged user the server runs as and gives it the
// cluster's directory.
func (c *Cluster) dropRoot() error {
	if _, err := exec.LookPath("runuser"); err != nil {
		return errors.New("running as root, and runuser is missing: PostgreSQL cannot run as root")
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return err
		}
		c.runAs = name
		return nil
	}
	return errors.New("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")
}

func (c *Cluster) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.binDir, tool)
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	return []byte(strings.TrimSpace(string(out))), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
