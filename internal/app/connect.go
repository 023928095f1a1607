package app

import (
	"context"
	"fmt"
	"time"

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
		return nil, fmt.Errorf("database %s is not reachable: %w", redacted, err)
	}
	return pool, nil
}
