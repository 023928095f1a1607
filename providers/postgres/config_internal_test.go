package postgres

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// TestScanSQLAgreesWithPgx checks that validation finds exactly the
// parameters pgx.NamedArgs will bind: the names scanSQL finds, each given a
// value of its own, are every argument pgx's rewrite produces.
func TestScanSQLAgreesWithPgx(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{`SELECT 1 WHERE a = @op_key AND b = @recipient AND c = @op_key`, []string{"op_key", "recipient"}},
		{`SELECT '@a', E'\'@b', "@c", $$ @d $$, $t$ @e $t$ -- @f` + "\n" + `/* @g /* @h */ @i */ @since`, []string{"since"}},
		{`SELECT x @> y, x @@ y, x @@z, @_u1`, []string{"z", "_u1"}},
		{`SELECT a$b, a$1, @until::timestamptz, @action||'x'`, []string{"until", "action"}},
		{`SELECT 'it''s @x', "a""@y", @é`, nil},
		{`SELECT éa@b, U&'@c', e@d`, []string{"b", "d"}},
		{`SELECT $1, $tag$ unterminated @x`, nil},
		{`SELECT 1 -- @x`, nil},
		{`SELECT 1 /* @x`, nil},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			t.Parallel()
			got := scanSQL(tc.sql).params
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scanSQL params (-want +got):\n%s", diff)
			}
			args := pgx.NamedArgs{}
			for i, name := range got {
				args[name] = i + 1
			}
			_, bound, err := args.RewriteQuery(context.Background(), nil, tc.sql, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(bound) != len(got) {
				t.Fatalf("pgx binds %d parameters, scanSQL found %d", len(bound), len(got))
			}
			for i, v := range bound {
				if v == nil {
					t.Errorf("pgx binds parameter $%d that scanSQL did not find", i+1)
				}
			}
		})
	}
}

func TestScanSQLStatements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sql        string
		first      string
		after      bool
		positional string
	}{
		{"SELECT 1", "SELECT", false, ""},
		{"  -- c\n/* c */ (with x as (select 1) select 1);", "with", false, ""},
		{"SELECT ';' AS a, $$;$$ AS b -- ;\n; /* x */ ", "SELECT", false, ""},
		{"SELECT 1; SELECT 2", "SELECT", true, ""},
		{"SELECT 1;;", "SELECT", false, ""}, // empty statements are harmless
		{"SELECT $12, $3", "SELECT", false, "$12"},
	} {
		got := scanSQL(tc.sql)
		if got.firstWord != tc.first || got.afterSemicolon != tc.after || got.positional != tc.positional {
			t.Errorf("scanSQL(%q) = first %q, after ';' %v, positional %q; want %q, %v, %q",
				tc.sql, got.firstWord, got.afterSemicolon, got.positional, tc.first, tc.after, tc.positional)
		}
	}
}
