// Package migrations holds sweeper's embedded schema migrations and applies
// them, together with River's own, under one PostgreSQL advisory lock.
//
// Two components are migrated, in this order:
//
//   - river: River's job tables (rivermigrate), in schema [Schema];
//   - sweeper: the ledger contract (schema ledger) and sweeper's own tables
//     (schema [Schema]), embedded SQL files applied with goose; the history
//     is kept in sweeper.schema_migrations.
//
// Every replica may run [Migrator.Up] at start: the advisory lock serialises
// them, and a second run finds nothing left to do.
package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Schema holds sweeper's own tables, River's tables and the migration
// history. Keeping River out of the search path's schema means an
// application that runs River itself never shares a leader or queues with
// sweeper.
const Schema = "sweeper"

// historyTable records which embedded migrations goose has applied.
const historyTable = Schema + ".schema_migrations"

// lockID is the key of the session advisory lock held while migrating:
// the first 8 bytes of SHA-256("sweeper.migrations").
const lockID int64 = 0x5d0f3c6b9a2e4471

//go:embed sql/*.sql
var embedded embed.FS

// Component names, as reported by [Migrator.Status].
const (
	ComponentRiver   = "river"
	ComponentSweeper = "sweeper"
)

// Version is one migration of one component and whether it is applied.
type Version struct {
	Component string    `json:"component"`
	Version   int64     `json:"version"`
	Name      string    `json:"name"`
	Applied   bool      `json:"applied"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
	// Unknown is a migration the database has applied and this binary
	// does not know: a newer binary applied it (the database is ahead).
	// Its Name is empty.
	Unknown bool `json:"unknown,omitempty"`
}

// Count is what a list of versions says of a database: how many
// migrations are applied, pending (known to this binary, not applied),
// and unknown (applied by a newer binary).
type Count struct {
	Applied, Pending, Unknown int
}

// Counts counts versions as [Migrator.Status] lists them.
func Counts(versions []Version) Count {
	var c Count
	for _, v := range versions {
		switch {
		case v.Unknown:
			c.Unknown++
		case v.Applied:
			c.Applied++
		default:
			c.Pending++
		}
	}
	return c
}

// AheadError is the refusal to work on, or roll back, a database that has
// migrations this binary does not know: a newer binary applied them, and
// this one cannot tell what its tables mean now.
type AheadError struct {
	Unknown []Version
}

func (e *AheadError) Error() string {
	names := make([]string, len(e.Unknown))
	for i, v := range e.Unknown {
		names[i] = fmt.Sprintf("%s %d", v.Component, v.Version)
	}
	return fmt.Sprintf("the database is ahead of this binary: %d migration(s) applied that it does not know (%s); "+
		"run the newer sweeper that applied them", len(e.Unknown), strings.Join(names, ", "))
}

// Unknown are the versions of versions that are Unknown: applied by a
// newer binary.
func Unknown(versions []Version) []Version {
	var out []Version
	for _, v := range versions {
		if v.Unknown {
			out = append(out, v)
		}
	}
	return out
}

// Migrator applies and reports migrations on one database.
type Migrator struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// New returns a Migrator over pool. A nil logger discards River's and
// goose's progress messages.
func New(pool *pgxpool.Pool, logger *slog.Logger) *Migrator {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Migrator{pool: pool, logger: logger}
}

// Up applies every pending migration of River and of sweeper, holding a
// session advisory lock for the whole run so that replicas starting together
// take turns. It returns the versions it applied (none when the database was
// current). Waiting for the lock ends with ctx. A database with migrations
// this binary does not know is refused with an [*AheadError], unchanged.
func (m *Migrator) Up(ctx context.Context) ([]Version, error) {
	conn, unlock, err := m.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	// A database a newer binary migrated is left as it is: this binary
	// cannot tell what its tables mean now.
	if ok, err := m.tableExists(ctx, historyTable); err != nil {
		return nil, err
	} else if ok {
		if err := m.Ahead(ctx); err != nil {
			return nil, err
		}
	}

	// River's tables and goose's history live in Schema, which must exist
	// before either tool runs.
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+Schema); err != nil {
		return nil, fmt.Errorf("migrate: create schema %s: %w", Schema, err)
	}

	var applied []Version
	riverMigrator, err := m.river()
	if err != nil {
		return nil, err
	}
	res, err := riverMigrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("migrate: river: %w", err)
	}
	for _, v := range res.Versions {
		applied = append(applied, Version{Component: ComponentRiver, Version: int64(v.Version), Name: v.Name, Applied: true})
	}

	provider, db, err := m.goose()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	results, err := provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: sweeper: %w", err)
	}
	for _, r := range results {
		applied = append(applied, Version{Component: ComponentSweeper, Version: r.Source.Version, Name: path.Base(r.Source.Path), Applied: true})
	}
	return applied, nil
}

// Status lists every known migration of River and of sweeper, applied or
// pending, in the order Up applies them. It changes nothing: on a database
// that was never migrated every version is reported pending.
func (m *Migrator) Status(ctx context.Context) ([]Version, error) {
	var out []Version

	riverMigrator, err := m.river()
	if err != nil {
		return nil, err
	}
	riverApplied := map[int]bool{}
	if ok, err := m.tableExists(ctx, Schema+".river_migration"); err != nil {
		return nil, err
	} else if ok {
		existing, err := riverMigrator.ExistingVersions(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: river status: %w", err)
		}
		for _, v := range existing {
			riverApplied[v.Version] = true
		}
	}
	knownRiver := map[int]bool{}
	for _, v := range riverMigrator.AllVersions() {
		knownRiver[v.Version] = true
		out = append(out, Version{Component: ComponentRiver, Version: int64(v.Version), Name: v.Name, Applied: riverApplied[v.Version]})
	}
	for _, v := range slices.Sorted(maps.Keys(riverApplied)) {
		if !knownRiver[v] {
			out = append(out, Version{Component: ComponentRiver, Version: int64(v), Applied: true, Unknown: true})
		}
	}

	provider, db, err := m.goose()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if ok, err := m.tableExists(ctx, historyTable); err != nil {
		return nil, err
	} else if !ok {
		for _, s := range provider.ListSources() {
			out = append(out, Version{Component: ComponentSweeper, Version: s.Version, Name: path.Base(s.Path)})
		}
		return out, nil
	}
	statuses, err := provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: sweeper status: %w", err)
	}
	known := map[int64]bool{}
	for _, s := range statuses {
		known[s.Source.Version] = true
		out = append(out, Version{
			Component: ComponentSweeper,
			Version:   s.Source.Version,
			Name:      path.Base(s.Source.Path),
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	// goose lists only the migrations it has files for: those a newer
	// binary applied are in the history alone.
	rows, err := m.pool.Query(ctx, `SELECT version_id, max(tstamp) FROM `+historyTable+`
		WHERE version_id > 0 AND is_applied GROUP BY version_id ORDER BY version_id`)
	if err != nil {
		return nil, fmt.Errorf("migrate: sweeper history: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Version int64
		At      time.Time
	}])
	if err != nil {
		return nil, fmt.Errorf("migrate: sweeper history: %w", err)
	}
	for _, a := range applied {
		if !known[a.Version] {
			out = append(out, Version{Component: ComponentSweeper, Version: a.Version, Applied: true, AppliedAt: a.At, Unknown: true})
		}
	}
	return out, nil
}

// Down rolls back the last n of sweeper's own migrations, newest first,
// under the same advisory lock as [Migrator.Up], and returns them. River's
// migrations are never rolled back: River's tables outlive sweeper's
// schema versions. It refuses, changing nothing, when the database has
// migrations this binary does not know (an [*AheadError]: roll back with
// the binary that applied them) or fewer than n of sweeper's are applied.
// Each step is one migration's Down section, in its own transaction: a
// step that fails leaves the earlier ones rolled back.
func (m *Migrator) Down(ctx context.Context, n int) ([]Version, error) {
	if n < 1 {
		return nil, fmt.Errorf("migrate: roll back at least one migration, not %d", n)
	}
	_, unlock, err := m.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	versions, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	if u := Unknown(versions); len(u) > 0 {
		return nil, &AheadError{Unknown: u}
	}
	applied := 0
	for _, v := range versions {
		if v.Component == ComponentSweeper && v.Applied {
			applied++
		}
	}
	if n > applied {
		return nil, fmt.Errorf("migrate: cannot roll back %d migration(s): %d of sweeper's are applied", n, applied)
	}
	provider, db, err := m.goose()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var done []Version
	for range n {
		r, err := provider.Down(ctx)
		if err != nil {
			return done, fmt.Errorf("migrate: roll back: %w", err)
		}
		done = append(done, Version{Component: ComponentSweeper, Version: r.Source.Version, Name: path.Base(r.Source.Path)})
	}
	return done, nil
}

// Pending reports how many migrations Up would apply; zero means current.
// Migrations the database has and this binary does not know are not
// counted: see [Migrator.Ahead].
func (m *Migrator) Pending(ctx context.Context) (int, error) {
	versions, err := m.Status(ctx)
	if err != nil {
		return 0, err
	}
	return Counts(versions).Pending, nil
}

// Ahead returns an [*AheadError] when the database has migrations this
// binary does not know, nil when it has none.
func (m *Migrator) Ahead(ctx context.Context) error {
	versions, err := m.Status(ctx)
	if err != nil {
		return err
	}
	if u := Unknown(versions); len(u) > 0 {
		return &AheadError{Unknown: u}
	}
	return nil
}

func (m *Migrator) river() (*rivermigrate.Migrator[pgx.Tx], error) {
	migrator, err := rivermigrate.New(riverpgxv5.New(m.pool), &rivermigrate.Config{
		Logger: m.logger,
		Schema: Schema,
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: river: %w", err)
	}
	return migrator, nil
}

func (m *Migrator) goose() (*goose.Provider, *sql.DB, error) {
	fsys, err := fs.Sub(embedded, "sql")
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: embedded files: %w", err)
	}
	db := stdlib.OpenDBFromPool(m.pool)
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(historyTable),
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(m.logger),
	)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrate: sweeper: %w", err)
	}
	return provider, db, nil
}

func (m *Migrator) tableExists(ctx context.Context, name string) (bool, error) {
	var exists bool
	if err := m.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil {
		return false, fmt.Errorf("migrate: look for %s: %w", name, err)
	}
	return exists, nil
}

// Fingerprint identifies the full set of migrations Up would apply —
// River's and sweeper's — so that a database built from one set (a test
// template, say) is never mistaken for another.
func Fingerprint() (string, error) {
	h := sha256.New()
	migrator, err := rivermigrate.New(riverpgxv5.New(nil), &rivermigrate.Config{Schema: Schema})
	if err != nil {
		return "", fmt.Errorf("migrate: river: %w", err)
	}
	for _, v := range migrator.AllVersions() {
		fmt.Fprintf(h, "river %d %s\n%s\n", v.Version, v.Name, v.SQLUp)
	}
	err = fs.WalkDir(embedded, "sql", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := embedded.ReadFile(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "sweeper %s\n%s\n", name, b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("migrate: embedded files: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lock takes the migrations' session advisory lock on a connection of its
// own, waiting for it as long as ctx lasts, so that replicas migrating
// together take turns. It returns the connection holding the lock and the
// function that releases both.
func (m *Migrator) lock(ctx context.Context) (*pgxpool.Conn, func(), error) {
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("migrate: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockID); err != nil {
		conn.Release()
		return nil, nil, fmt.Errorf("migrate: take advisory lock: %w", err)
	}
	return conn, func() {
		// A fresh context: the lock must be released even when ctx is done;
		// should this fail, the lock goes with the connection.
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(unlockCtx, "SELECT pg_advisory_unlock($1)", lockID); err != nil {
			conn.Conn().Close(unlockCtx) //nolint:errcheck // closing ends the session and so the lock
		}
		conn.Release()
	}, nil
}
