package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// TestOpenRefusesAnUnusableAdoptedTable: a command does not start on an
// adopted table it cannot use — here one whose op_key is not unique — and
// says why; once the table has its unique index, it starts. An op_key that
// may be NULL does not stop it (each NULL row is its own invalid_operation
// ticket): it starts with a WARN giving the statement that fixes it.
func TestOpenRefusesAnUnusableAdoptedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, url)
	ddl := strings.Replace(ledgertables.Adopted.DDL, `"IdemKey"    varchar(255) NOT NULL UNIQUE,`, `"IdemKey"    varchar(255) NOT NULL,`, 1)
	if ddl == ledgertables.Adopted.DDL {
		t.Fatal("the test kit's table changed: no UNIQUE on IdemKey to take away")
	}
	if _, err := pool.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Sprintf("[database]\nurl = %q\n[review]\ndefault_owner = \"U0DEFAULT1\"\n", url)+
		ledgertables.Adopted.Config, kinds, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	open := func() error {
		logged.Reset()
		logger := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, &logged), &slog.HandlerOptions{Level: slog.LevelWarn}))
		_, closeApp, err := app.Open(ctx, cfg, app.OpenOptions{Kinds: kinds, Logger: logger, NoLookups: true})
		if err == nil {
			closeApp()
		}
		return err
	}
	err = open()
	if err == nil || !strings.Contains(err.Error(), `the ledger table "public"."Outbound Log" ([ledger] table) cannot be used`) ||
		!strings.Contains(err.Error(), "no unique index") {
		t.Fatalf("open on a table without a unique op_key: %v", err)
	}
	if _, err := pool.Exec(ctx, `CREATE UNIQUE INDEX ON public."Outbound Log" (`+pgx.Identifier{"IdemKey"}.Sanitize()+`)`); err != nil {
		t.Fatal(err)
	}
	if err := open(); err != nil {
		t.Fatalf("open once the table is usable: %v", err)
	}
	// An op_key that may be NULL: it starts, and warns with the statement
	// that fixes it.
	if _, err := pool.Exec(ctx, `ALTER TABLE public."Outbound Log" ALTER COLUMN "IdemKey" DROP NOT NULL`); err != nil {
		t.Fatal(err)
	}
	fix := `ALTER TABLE "public"."Outbound Log" ALTER COLUMN "IdemKey" SET NOT NULL`
	if err := open(); err != nil {
		t.Fatalf("open on a table whose op_key may be NULL: %v", err)
	}
	if got := logged.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "allows NULL") || !strings.Contains(got, "SET NOT NULL") {
		t.Fatalf("no WARN with the fix for a nullable op_key: %q", got)
	}
	if _, err := pool.Exec(ctx, fix); err != nil {
		t.Fatal(err)
	}
	if err := open(); err != nil {
		t.Fatalf("open once the op_key is NOT NULL: %v", err)
	}
	if got := logged.String(); strings.Contains(got, "allows NULL") {
		t.Fatalf("a WARN once the op_key is NOT NULL: %q", got)
	}
}
