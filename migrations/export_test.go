package migrations

import (
	"context"
	"fmt"
)

// DownOne rolls back sweeper's latest applied migration, so that a test
// can check that its Down works and that Up applies it again.
func (m *Migrator) DownOne(ctx context.Context) error {
	provider, db, err := m.goose()
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := provider.Down(ctx); err != nil {
		return fmt.Errorf("migrate: sweeper down: %w", err)
	}
	return nil
}
