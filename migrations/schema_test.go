package migrations_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

var update = flag.Bool("update", false, "rewrite schema.sql from a freshly migrated database")

// schemaFile is the schema after every migration, read from a migrated
// database's catalogs.
const schemaFile = "schema.sql"

// TestSchemaFileIsCurrent: schema.sql is what the migrations build. It
// fails when a migration changes a table, view, function or trigger and
// schema.sql was not regenerated (go test ./migrations/ -run
// TestSchemaFileIsCurrent -update).
func TestSchemaFileIsCurrent(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t)
	got, err := dumpSchema(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(schemaFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v: run go test ./migrations/ -run TestSchemaFileIsCurrent -update", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s is not what the migrations build (-file +migrated); run go test ./migrations/ -run TestSchemaFileIsCurrent -update:\n%s", schemaFile, diff)
	}
}

// TestDumpSchemaSeesAChange: the dump changes when a function's body,
// a column or a trigger changes, so a stale schema.sql cannot pass.
func TestDumpSchemaSeesAChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	before, err := dumpSchema(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE FUNCTION sweeper.zz_planted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
		`CREATE TRIGGER zz_planted BEFORE UPDATE ON sweeper.tickets FOR EACH ROW EXECUTE FUNCTION sweeper.zz_planted()`,
		`ALTER TABLE sweeper.tickets ADD COLUMN zz_planted int`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		after, err := dumpSchema(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if after == before {
			t.Errorf("the dump did not change after %s", stmt)
		}
		before = after
	}
}

// dumpSchema writes the schemas sweeper and ledger as the catalogs hold
// them — types, tables with their columns, constraints, indexes and
// triggers, views, functions — each kind ordered by name, leaving out
// River's objects and goose's history table. It reads the catalogs rather
// than running pg_dump so that the text is the same whichever pg_dump is
// installed.
func dumpSchema(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var b strings.Builder
	b.WriteString(`-- The schema sweeper's migrations build: the schemas sweeper and ledger
-- after every file in sql/, read from a migrated database's catalogs.
-- Generated: do not edit. Regenerate with
--   go test ./migrations/ -run TestSchemaFileIsCurrent -update
-- TestSchemaFileIsCurrent fails when this file and the migrations differ.
-- Left out: River's tables, types and functions (river_*, in schema
-- sweeper, created by rivermigrate) and goose's history table
-- (sweeper.schema_migrations). Not a migration: never run this file.
`)
	// Objects of River and goose, by name, in schema sweeper.
	const notRiver = `NOT (n.nspname = 'sweeper' AND (%s LIKE 'river\_%%' OR %s = 'schema_migrations' OR %s LIKE 'schema\_migrations\_%%'))`
	skip := func(col string) string { return fmt.Sprintf(notRiver, col, col, col) }
	schemas := `n.nspname IN ('ledger', 'sweeper')`

	section := func(title string) { fmt.Fprintf(&b, "\n-- %s\n", title) }
	each := func(q string, write func(row []string)) error {
		rows, err := pool.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
			vals, err := r.Values()
			if err != nil {
				return nil, err
			}
			out := make([]string, len(vals))
			for i, v := range vals {
				if v != nil {
					out[i] = fmt.Sprint(v)
				}
			}
			return out, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		for _, row := range all {
			write(row)
		}
		return nil
	}

	section("Schemas")
	if err := each(`SELECT n.nspname FROM pg_namespace n WHERE `+schemas+` ORDER BY 1`, func(r []string) {
		fmt.Fprintf(&b, "CREATE SCHEMA %s;\n", r[0])
	}); err != nil {
		return "", err
	}

	section("Types")
	if err := each(`SELECT n.nspname || '.' || t.typname,
			CASE t.typtype
			WHEN 'e' THEN 'ENUM (' || (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) || ')'
			WHEN 'd' THEN format_type(t.typbasetype, t.typtypmod) ||
				coalesce((SELECT ' ' || string_agg(pg_get_constraintdef(c.oid, true), ' ' ORDER BY c.conname) FROM pg_constraint c WHERE c.contypid = t.oid), '')
			END, t.typtype
		FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		WHERE `+schemas+` AND t.typtype IN ('e', 'd') AND `+skip("t.typname")+`
		ORDER BY 1`, func(r []string) {
		if r[2] == "d" {
			fmt.Fprintf(&b, "CREATE DOMAIN %s AS %s;\n", r[0], r[1])
			return
		}
		fmt.Fprintf(&b, "CREATE TYPE %s AS %s;\n", r[0], r[1])
	}); err != nil {
		return "", err
	}

	section("Sequences (besides those of identity columns)")
	if err := each(`SELECT n.nspname || '.' || c.relname
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE `+schemas+` AND c.relkind = 'S' AND `+skip("c.relname")+`
			AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'i')
		ORDER BY 1`, func(r []string) {
		fmt.Fprintf(&b, "CREATE SEQUENCE %s;\n", r[0])
	}); err != nil {
		return "", err
	}

	type table struct{ oid, name string }
	var tables []table
	if err := each(`SELECT c.oid::text, n.nspname || '.' || c.relname
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE `+schemas+` AND c.relkind IN ('r', 'p') AND `+skip("c.relname")+`
		ORDER BY 2`, func(r []string) {
		tables = append(tables, table{r[0], r[1]})
	}); err != nil {
		return "", err
	}
	section("Tables")
	for _, tb := range tables {
		fmt.Fprintf(&b, "\nCREATE TABLE %s (\n", tb.name)
		var lines []string
		// Columns in their order in the table; generated and identity
		// columns as such.
		if err := each(`SELECT quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod) ||
				CASE WHEN a.attgenerated = 's' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid, true) || ') STORED'
				     WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid, true) ELSE '' END ||
				CASE a.attidentity WHEN 'a' THEN ' GENERATED ALWAYS AS IDENTITY' WHEN 'd' THEN ' GENERATED BY DEFAULT AS IDENTITY' ELSE '' END ||
				CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
			FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = `+tb.oid+` AND a.attnum > 0 AND NOT a.attisdropped
			ORDER BY a.attnum`, func(r []string) { lines = append(lines, "    "+r[0]) }); err != nil {
			return "", err
		}
		// Constraints by name; NOT NULL is on its column (PostgreSQL 18
		// lists it among the constraints too).
		if err := each(`SELECT 'CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid, true)
			FROM pg_constraint c WHERE c.conrelid = `+tb.oid+` AND c.contype <> 'n'
			ORDER BY c.conname`, func(r []string) { lines = append(lines, "    "+r[0]) }); err != nil {
			return "", err
		}
		b.WriteString(strings.Join(lines, ",\n"))
		b.WriteString("\n);\n")
		if err := each(`SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = `+tb.oid+` AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid)
			ORDER BY c.relname`, func(r []string) { fmt.Fprintf(&b, "%s;\n", r[0]) }); err != nil {
			return "", err
		}
		if err := each(`SELECT pg_get_triggerdef(t.oid, true) FROM pg_trigger t
			WHERE t.tgrelid = `+tb.oid+` AND NOT t.tgisinternal ORDER BY t.tgname`, func(r []string) {
			fmt.Fprintf(&b, "%s;\n", r[0])
		}); err != nil {
			return "", err
		}
		if err := each(`SELECT 'ALTER TABLE `+tb.name+` ENABLE ROW LEVEL SECURITY' FROM pg_class WHERE oid = `+tb.oid+` AND relrowsecurity`,
			func(r []string) { fmt.Fprintf(&b, "%s;\n", r[0]) }); err != nil {
			return "", err
		}
	}

	section("Views")
	if err := each(`SELECT n.nspname || '.' || c.relname, c.relkind::text, pg_get_viewdef(c.oid, true)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE `+schemas+` AND c.relkind IN ('v', 'm') AND `+skip("c.relname")+`
		ORDER BY 1`, func(r []string) {
		kind := "VIEW"
		if r[1] == "m" {
			kind = "MATERIALIZED VIEW"
		}
		fmt.Fprintf(&b, "\nCREATE %s %s AS\n%s\n", kind, r[0], strings.TrimRight(r[2], "\n"))
	}); err != nil {
		return "", err
	}

	section("Functions and procedures: each one's current definition")
	if err := each(`SELECT pg_get_functiondef(p.oid)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE `+schemas+` AND p.prokind IN ('f', 'p') AND `+skip("p.proname")+`
		ORDER BY n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)`, func(r []string) {
		fmt.Fprintf(&b, "\n%s;\n", strings.TrimRight(r[0], "\n"))
	}); err != nil {
		return "", err
	}
	return b.String(), nil
}
