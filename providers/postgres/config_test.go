package postgres_test

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/sweeper/sweeper/providers/postgres"
	"github.com/sweeper/sweeper/providers/providertest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	const valid = `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`
	validBlock := func(c *postgres.Config) { c.DSNEnv, c.Query = "MAILER_DB_DSN", valid }
	providertest.ConfigCases(t, postgres.Kind, validBlock, []providertest.ConfigCase[*postgres.Config]{
		{Desc: "valid", Change: func(*postgres.Config) {}},
		{Desc: "by recipient in a window, with every parameter", Change: func(c *postgres.Config) {
			c.Query = `WITH m AS (SELECT * FROM sent_emails WHERE recipient = @recipient AND created_at BETWEEN @since AND @until)
				SELECT id, created_at, body_hash AS payload_hash FROM m WHERE @action <> '' AND body_hash = @payload_hash;`
		}},
		{Desc: "a trailing semicolon and comment", Change: func(c *postgres.Config) { c.Query = valid + ";  -- the end\n" }},
		{Desc: "parenthesised, lower case", Change: func(c *postgres.Config) { c.Query = "(select id from t where op_key = @op_key)" }},
		{Desc: "@ in literals, identifiers, comments and operators is no parameter", Change: func(c *postgres.Config) {
			c.Query = `SELECT id, '@x; DELETE' AS "a@b;", E'\'@y;' AS e, $q$ @z; $q$ AS d, $$@w$$ AS d2 -- @c;
				/* @d; /* nested @e; */ still a comment; */
				FROM t WHERE op_key = @op_key AND tags @> '{}' AND doc @@ q AND a$1 = 1`
		}},
		{Desc: "empty", Change: func(c *postgres.Config) { c.Query = "  \n" }, Want: []string{"query: required"}},
		// dsn_env is checked by the configuration, through SecretEnvs.
		{Desc: "no dsn_env", Change: func(c *postgres.Config) { c.DSNEnv = "" }},
		{Desc: "a second statement", Change: func(c *postgres.Config) { c.Query = valid + "; DELETE FROM sent_emails" },
			Want: []string{"query: must be one statement: found more SQL after ';'"}},
		{Desc: "not a SELECT", Change: func(c *postgres.Config) { c.Query = "DELETE FROM sent_emails WHERE op_key = @op_key RETURNING id" },
			Want: []string{"query: must be a SELECT (or WITH … SELECT)"}},
		{Desc: "neither op_key nor recipient", Change: func(c *postgres.Config) {
			c.Query = "SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE created_at > @since"
		}, Want: []string{"query: must use @op_key or @recipient, or every operation would match the same records"}},
		{Desc: "parameters only in literals and comments count for nothing", Change: func(c *postgres.Config) {
			c.Query = "SELECT id FROM t WHERE op_key = '@op_key' -- @recipient"
		}, Want: []string{"query: must use @op_key or @recipient, or every operation would match the same records"}},
		{Desc: "unknown parameters, names case-sensitive", Change: func(c *postgres.Config) {
			c.Query = valid + " AND tenant = @tenant AND x = @OP_KEY AND doc @@to_tsquery('a')"
		}, Want: []string{
			"query: unknown parameter @tenant: the parameters are @op_key, @recipient, @action, @payload_hash, @since, @until",
			"query: unknown parameter @OP_KEY: the parameters are @op_key, @recipient, @action, @payload_hash, @since, @until",
			"query: unknown parameter @to_tsquery: the parameters are @op_key, @recipient, @action, @payload_hash, @since, @until",
		}},
		{Desc: "positional parameter", Change: func(c *postgres.Config) { c.Query = valid + " AND recipient = $2" },
			Want: []string{"query: positional parameter $2: use the named parameters @op_key, @recipient, @action, @payload_hash, @since, @until"}},
		{Desc: "invalid UTF-8", Change: func(c *postgres.Config) { c.Query = valid + " AND x = '\xff'" },
			Want: []string{"query: must be valid UTF-8"}},
		{Desc: "returns op_key without binding @op_key", Change: func(c *postgres.Config) {
			c.Query = "SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE recipient = @recipient"
		}, Want: []string{"query: returns op_key, so it matches by key, but does not bind @op_key: select rows by op_key = @op_key, or return no op_key to match by resemblance"}},
		{Desc: "op_key from the parameter", Change: func(c *postgres.Config) {
			c.Query = "SELECT @op_key AS op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key OR recipient = @recipient"
		}, Want: []string{"query: op_key in the select list is computed from a parameter: return the op_key each row is stored under, which sweeper compares with the operation's"}},
		{Desc: "the batch form without op_key in its select list", Change: func(c *postgres.Config) {
			c.Query = "SELECT * FROM sent_emails WHERE op_key = ANY(@op_keys)"
		}, Want: []string{"query: a query that binds @op_keys must name op_key in its select list (op_key, t.op_key or … AS op_key): each row says which operation it answers for"}},
		{Desc: "max_conns zero", Change: func(c *postgres.Config) { c.MaxConns = 0 }, Want: []string{"max_conns: must be between 1 and 100"}},
		{Desc: "max_conns too many", Change: func(c *postgres.Config) { c.MaxConns = 101 }, Want: []string{"max_conns: must be between 1 and 100"}},
		{Desc: "everything wrong at once", Change: func(c *postgres.Config) { *c = postgres.Config{} }, Want: []string{
			"query: required",
			"max_conns: must be between 1 and 100",
		}},
	})
}

func TestSecretEnvs(t *testing.T) {
	t.Parallel()
	c := postgres.NewConfig()
	// Required even unnamed: the configuration then reports dsn_env missing.
	if got := c.SecretEnvs(); len(got) != 1 || got[0].Key != "dsn_env" || !got[0].Required {
		t.Errorf("SecretEnvs() of an unnamed variable = %+v", got)
	}
	c.DSNEnv = "MAILER_DB_DSN"
	if got := c.SecretEnvs(); len(got) != 1 || got[0].Name != "MAILER_DB_DSN" || !got[0].Required {
		t.Errorf("SecretEnvs() = %+v, want MAILER_DB_DSN, required", got)
	}
}

// exampleBlock is the block proposed for config.example.toml, without its
// common keys.
const exampleBlock = `
dsn_env = "MAILER_DB_DSN"
query = '''
SELECT id, created_at, body_hash AS payload_hash, recipient
FROM sent_emails
WHERE op_key = @op_key
  AND created_at BETWEEN @since AND @until
'''
max_conns = 4
`

func TestExampleBlock(t *testing.T) {
	t.Parallel()
	c := postgres.NewConfig()
	md, err := toml.Decode(exampleBlock, c)
	if err != nil {
		t.Fatal(err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		t.Errorf("unknown keys: %v", undecoded)
	}
	if errs := c.Validate(); len(errs) > 0 {
		t.Errorf("Validate: %v", errs)
	}
	if c.MaxConns != postgres.DefaultMaxConns {
		t.Errorf("max_conns = %d", c.MaxConns)
	}
}

// TestNotes: check-config says when a query that binds @op_key matches by
// resemblance, because it returns no op_key.
func TestNotes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query string
		note  bool
	}{
		{"SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key", true},
		{"SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key OR (op_key IS NULL AND recipient = @recipient)", true},
		{"SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key", false},
		{"SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE recipient = @recipient", false},
	} {
		notes := (&postgres.Config{Query: tc.query}).Notes()
		if got := len(notes) == 1 && strings.HasPrefix(notes[0], "query: binds @op_key but returns no op_key column, so it matches by resemblance"); got != tc.note || len(notes) > 1 {
			t.Errorf("%q: notes %q; want a note: %v", tc.query, notes, tc.note)
		}
	}
}
