package migrations

import (
	"context"
	"fmt"
)

// DownTo rolls back sweeper's migrations after version, so that a test
// can check that their Down works and that Up applies them again.
func (m *Migrator) DownTo(ctx context.Context, version int64) error {
	provider, db, err := m.goose()
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := provider.DownTo(ctx, version); err != nil {
		return fmt.Errorf("migrate: sweeper down: %w", err)
	}
	return nil
}
