package app_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestOpenRefusesADatabaseAheadOfIt: a database a newer sweeper migrated
// (a migration this binary does not know) is refused, naming the
// migration and the flag; with AllowNewerSchema it opens, with a WARN.
func TestOpenRefusesADatabaseAheadOfIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewDatabase(t)
	cfg, err := config.Parse(fmt.Sprintf("[database]\nurl = %q\n[review]\ndefault_owner = \"U0DEFAULT1\"\n", url), kinds,
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	open := func(allow bool) error {
		logged.Reset()
		logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
		_, closeApp, err := app.Open(ctx, cfg, app.OpenOptions{Logger: logger, NoLookups: true, AllowNewerSchema: allow})
		if err == nil {
			closeApp()
		}
		return err
	}
	if err := open(false); err != nil || logged.Len() != 0 {
		t.Fatalf("open on a current database: %v\n%s", err, logged.String())
	}
	if _, err := dbtest.Pool(t, url).Exec(ctx, `INSERT INTO sweeper.schema_migrations (version_id, is_applied) VALUES (20991231000001, true)`); err != nil {
		t.Fatal(err)
	}
	err = open(false)
	var ahead *migrations.AheadError
	if !errors.As(err, &ahead) || !strings.Contains(err.Error(), "sweeper 20991231000001") || !strings.Contains(err.Error(), "--allow-newer-schema") {
		t.Fatalf("open on a database ahead: %v, want the refusal naming the migration and the flag", err)
	}
	if err := open(true); err != nil {
		t.Fatalf("open with AllowNewerSchema: %v", err)
	}
	if !strings.Contains(logged.String(), "ahead of this binary") {
		t.Errorf("no WARN when opening a database ahead:\n%s", logged.String())
	}
}
