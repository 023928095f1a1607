package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Placeholder marks a value the example configuration (and `sweeper init`)
// leaves for the operator to choose: a value that still holds it anywhere
// — the database URL, a provider's URL — is refused, naming its key, so
// that a copied example cannot run against a database or a provider
// nobody picked.
const Placeholder = "CHANGE-ME"

// maintenanceDatabases are databases a PostgreSQL cluster is created with:
// postgres, which tools and people connect to for administration, and the
// templates every new database is copied from. sweeper's schemas (ledger,
// sweeper, river) do not belong there.
var maintenanceDatabases = []string{"postgres", "template0", "template1"}

// simulated is implemented by a kind's settings that answer from rules in
// the file rather than from a provider (kind sim). Such a block settles
// nothing real, so it runs only when the block says it knows:
// Acknowledged reports its simulated = true.
type simulated interface {
	Acknowledged() bool
}

// placeholders returns a problem for each value of tree, the file's keys
// with the environment's applied, that still holds [Placeholder]. The
// database URL is left out: its effective value may come from
// SWEEPER_DATABASE_URL, and [checkDatabaseChoice] checks that one.
func placeholders(tree map[string]any) []error {
	var problems []error
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(v) {
				sub := k
				if path != "" {
					sub = path + "." + k
				}
				walk(sub, v[k])
			}
		case []map[string]any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			if path != "database.url" && strings.Contains(v, Placeholder) {
				problems = append(problems, fmt.Errorf("%s: still the placeholder %s; set it here or in %s", path, Placeholder, envNameOf(path)))
			}
		}
	}
	walk("", tree)
	return problems
}

// envNameOf is the variable that sets the key at path (dotted; no list
// index in it).
func envNameOf(path string) string {
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return EnvName(strings.Split(path, ".")...)
}

// checkDatabaseChoice refuses an effective database URL nobody chose: the
// example's placeholder, or a cluster's maintenance database (postgres,
// unless allowMaintenance) or a template, where a literal copy of an
// example would put sweeper's tables among whatever else lives there.
// A URL that does not parse is left to [CheckDatabaseURL]'s message.
func checkDatabaseChoice(effective string, allowMaintenance bool) []error {
	if strings.Contains(effective, Placeholder) {
		return []error{fmt.Errorf("database.url: still the placeholder %s; set your ledger's URL here or in %s", Placeholder, EnvDatabaseURL)}
	}
	name := databaseName(effective)
	switch {
	case !slices.Contains(maintenanceDatabases, name):
	case name == "postgres" && allowMaintenance:
	case name == "postgres":
		return []error{fmt.Errorf("database.url: names the maintenance database postgres; create a database for the ledger " +
			"(CREATE DATABASE ledger) and name it in the URL, or set database.allow_maintenance_database = true " +
			"if postgres is the only database you have (some hosted offers)")}
	default:
		return []error{fmt.Errorf("database.url: names %s, a template every new database is copied from; create a database for the ledger (CREATE DATABASE ledger) and name it in the URL", name)}
	}
	return nil
}

// databaseName is the database a postgres:// URL names: its dbname
// parameter, else its path; "" when it names none (the server then uses
// the user's name) or does not parse.
func databaseName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if name := u.Query().Get("dbname"); name != "" {
		return name
	}
	return strings.TrimPrefix(u.Path, "/")
}
