package dbtest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestDropAbandoned: the databases a killed run left behind go at the next
// run — only those made more than two hours ago that nobody is connected
// to; a run's own, a newer run's, one in use and a database of the user's
// whose name merely starts alike stay.
func TestDropAbandoned(t *testing.T) {
	ctx := context.Background()
	server := ServerURL(t)
	now := time.Now()
	at := func(ago time.Duration) string { return strconv.FormatInt(now.Add(-ago).Unix(), 10) }
	old := "sweeper_test_" + at(3*time.Hour) + "_0123456789ab"
	oldShared := "sweeper_shared_" + at(26*time.Hour) + "_0123456789ab"
	inUse := "sweeper_test_" + at(3*time.Hour) + "_ba9876543210"
	recent := "sweeper_test_" + at(time.Minute) + "_0123456789ab"
	users := "sweeper_test_" + at(3*time.Hour) + "_not_a_suffix"
	all := []string{old, oldShared, inUse, recent, users}
	for _, name := range all {
		if err := adminExec(server, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := adminExec(server, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Error(err)
			}
		})
	}
	conn, err := pgx.Connect(ctx, withDatabase(server, inUse))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	dropAbandoned(server, now)

	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, name := range all {
		var exists bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if want := name != old && name != oldShared; exists != want {
			t.Errorf("%s: exists %v after the sweep, want %v", name, exists, want)
		}
	}
}

// TestSuffixIsSwept: the names the package gives its databases are the
// ones the sweep knows, with the time they were made.
func TestSuffixIsSwept(t *testing.T) {
	before := time.Now().Unix()
	for _, prefix := range []string{"sweeper_test_", "sweeper_shared_"} {
		name := prefix + randomSuffix()
		m := abandoned.FindStringSubmatch(name)
		if m == nil {
			t.Fatalf("%s is not a name the sweep knows", name)
		}
		made, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil || made < before || made > time.Now().Unix() {
			t.Errorf("%s says it was made at %s, want now (%d)", name, m[2], before)
		}
	}
}
