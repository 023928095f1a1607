package app_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestConnectToAMissingDatabaseSaysHowToCreateIt: a database the server
// does not have (SQLSTATE 3D000) is reported as missing, with the command
// that creates it, not as a server that cannot be reached.
func TestConnectToAMissingDatabaseSaysHowToCreateIt(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/sweeper_never_created"
	cfg := &config.Config{Database: config.Database{URL: u.String(), MaxConns: 2}}
	pool, err := app.Connect(context.Background(), cfg)
	if err == nil {
		pool.Close()
		t.Fatal("connected to a database that does not exist")
	}
	for _, want := range []string{"does not exist", "createdb sweeper_never_created", `CREATE DATABASE "sweeper_never_created"`, "3D000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "not reachable") {
		t.Errorf("error %q calls the server not reachable", err)
	}
}
