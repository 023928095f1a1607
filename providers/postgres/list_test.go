package postgres_test

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postgres"
)

// byOpKeyListed is a block's list_query: the rows carrying an op_key in
// the window asked.
const byOpKeyListed = `
SELECT op_key, id, created_at, body_hash AS payload_hash, recipient
FROM sent_emails
WHERE op_key IS NOT NULL AND id IS NOT NULL AND trim(id) <> '' AND created_at BETWEEN @since AND @until
ORDER BY id`

// newListAdapter is newAdapter with a list_query.
func newListAdapter(t *testing.T, dsn, sql, list string) *postgres.Adapter {
	t.Helper()
	cfg := postgres.NewConfig()
	cfg.DSNEnv, cfg.Query, cfg.ListQuery = dsnEnv, sql, list
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	lookup, err := postgres.Kind.New("mailer_db", cfg, providers.Env{
		Getenv: func(k string) string {
			if k == dsnEnv {
				return dsn
			}
			return ""
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := lookup.(*postgres.Adapter)
	t.Cleanup(a.Close)
	return a
}

// TestList: with a list_query, an adapter that matches by key lists the
// records carrying an op_key dated in the window asked, each with its
// op_key, in a read-only transaction; without one, or matching by
// resemblance, it does not list.
func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var _ providers.Lister = (*postgres.Adapter)(nil)

	a := newListAdapter(t, b.dsn, `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`, byOpKeyListed)
	if !a.Lists() {
		t.Fatal("Lists() = false with a list_query and a query that matches by key")
	}
	before := b.count(t)
	listed, err := a.List(t.Context(), time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var got []string
	for _, l := range listed {
		got = append(got, l.OpKey+"/"+l.Record.ID)
		if l.Record.CreatedAt.IsZero() || !strings.Contains(l.Record.Excerpt, "mailer_db row id=") {
			t.Errorf("%s: record %+v: want its created_at and excerpt", l.OpKey, l.Record)
		}
	}
	want := []string{"op-1/msg-1", "op-dup/msg-2a", "op-dup/msg-2b", "op-fields/msg-f", "op-fields-hashed/msg-fh", "op-bad-fields/msg-nf", "op-window/inside"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if n := b.count(t); n != before {
		t.Errorf("sent_emails holds %d rows after List, %d before", n, before)
	}

	if a := newAdapter(t, b.dsn, `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`); a.Lists() {
		t.Error("Lists() = true without a list_query")
	} else if _, err := a.List(t.Context(), t0.Add(-time.Hour), t0); !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("List without a list_query: %v, want ErrUnsupported", err)
	}
	if a := newListAdapter(t, b.dsn, byOpKey, byOpKeyListed); a.Lists() {
		t.Error("Lists() = true for a query that matches by resemblance: its records name no operation")
	}

	// A row without an op_key is no listing's: a query to fix.
	bad := newListAdapter(t, b.dsn, `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`,
		`SELECT NULL::text AS op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE id = 'msg-1' AND created_at BETWEEN @since AND @until`)
	if _, err := bad.List(t.Context(), t0.Add(-time.Hour), t0.Add(time.Hour)); err == nil {
		t.Error("List of a row with no op_key: no error")
	}
}

// TestListQueryValidation: list_query is one SELECT that binds only
// @since and @until and names op_key in its select list.
func TestListQueryValidation(t *testing.T) {
	t.Parallel()
	base := `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`
	tests := []struct{ list, want string }{
		{byOpKeyListed, ""},
		{`SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE created_at BETWEEN @since AND @until`, "list_query: must name op_key in its select list"},
		{`SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`, "list_query: unknown parameter @op_key"},
		{`DELETE FROM sent_emails RETURNING op_key`, "list_query: must be a SELECT"},
		{`SELECT op_key, id FROM t WHERE created_at > $1`, "list_query: positional parameter $1"},
		{`SELECT op_key, id FROM t; SELECT 1`, "list_query: must be one statement"},
	}
	for _, tt := range tests {
		cfg := postgres.NewConfig()
		cfg.DSNEnv, cfg.Query, cfg.ListQuery = dsnEnv, base, tt.list
		var msgs []string
		for _, err := range cfg.Validate() {
			msgs = append(msgs, err.Error())
		}
		all := strings.Join(msgs, "\n")
		if tt.want == "" && all != "" || tt.want != "" && !strings.Contains(all, tt.want) {
			t.Errorf("list_query %q: errors %q, want %q", tt.list, all, tt.want)
		}
	}
}
