package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/tracing"
)

// Connect opens a pool on the configured database and checks it answers, so
// a wrong URL fails here with a clear message rather than mid-command. The
// message carries the URL with its password masked, or no URL when it does
// not parse cleanly: configuration refuses those, and this keeps a caller
// that skipped it from printing one.
func Connect(ctx context.Context, cfg *config.Config) (*pgxpool.Pool, error) {
	return connect(ctx, cfg, nil)
}

// connect is [Connect] with each connection's statements traced by tr.
func connect(ctx context.Context, cfg *config.Config, tr *tracing.Tracing) (*pgxpool.Pool, error) {
	redacted := "(a URL that does not parse)"
	if config.CheckDatabaseURL(cfg.Database.URL) == nil {
		redacted = config.RedactURL(cfg.Database.URL)
	}
	poolCfg, err := pgxpool.ParseConfig(cfg.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("database %s: invalid URL", redacted)
	}
	poolCfg.MaxConns = cfg.Database.MaxConns
	if tr.On() {
		poolCfg.ConnConfig.Tracer = tr.QueryTracer()
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", redacted, err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		if name, ok := missingDatabase(err, poolCfg.ConnConfig.Database); ok {
			return nil, fmt.Errorf("database %s does not exist on its server: create it (createdb %s, or CREATE DATABASE %s;), then run sweeper migrate: %w",
				redacted, name, pgx.Identifier{name}.Sanitize(), err)
		}
		return nil, fmt.Errorf("database %s is not reachable: %w", redacted, err)
	}
	return pool, nil
}

// missingDatabase reports whether err is the server's answer that the
// database does not exist (SQLSTATE 3D000, invalid_catalog_name), and
// the database's name as the URL gives it.
func missingDatabase(err error, name string) (string, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
		return "", false
	}
	return name, true
}
