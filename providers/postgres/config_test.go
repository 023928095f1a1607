package postgres_test

import (
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers/postgres"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	const valid = `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = @op_key`
	for _, tc := range []struct {
		desc   string
		modify func(c *postgres.Config)
		want   []string
	}{
		{desc: "valid", modify: func(*postgres.Config) {}},
		{desc: "by recipient in a window, with every parameter", modify: func(c *postgres.Config) {
			c.Query = `WITH m AS (SELECT * FROM sent_emails WHERE recipient = @recipient AND created_at BETWEEN @since AND @until)
				SELECT id, created_at, body_hash AS payload_hash FROM m WHERE @action <> '' AND body_hash = @payload_hash;`
		}},
		{desc: "a trailing semicolon and comment", modify: func(c *postgres.Config) { c.Query = valid + ";  -- the end\n" }},
		{desc: "parenthesised, lower case", modify: func(c *postgres.Config) { c.Query = "(select id from t where op_key = @op_key)" }},
		{desc: "@ in literals, identifiers, comments and operators is no parameter", modify: func(c *postgres.Config) {
			c.Query = `SELECT id, '@x; DELETE' AS "a@b;", E'\'@y;' AS e, $q$ @z; $q$ AS d, $$@w$$ AS d2 -- @c;
				/* @d; /* nested @e; */ still a comment; */
				FROM t WHERE op_key = @op_key AND tags @> '{}' AND doc @@ q AND a$1 = 1`
		}},
		{desc: "empty", modify: func(c *postgres.Config) { c.Query = "  \n" }, want: []string{"query: required"}},
		// dsn_env is checked by the configuration, through SecretEnvs.
		{desc: "no dsn_env", modify: func(c *postgres.Config) { c.DSNEnv = "" }},
		{desc: "a second statement", modify: func(c *postgres.Config) { c.Query = valid + "; DELETE FROM sent_emails" },
			want: []string{"query: must be one statement: found more SQL after ';'"}},
		{desc: "not a SELECT", modify: func(c *postgres.Config) { c.Query = "DELETE FROM sent_emails WHERE op_key = @op_key RETURNING id" },
			want: []string{"query: must be a SELECT (or WITH … SELECT)"}},
		{desc: "neither op_key nor recipient", modify: func(c *postgres.Config) {
			c.Query = "SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE created_at > @since"
		}, want: []string{"query: must use @op_key or @recipient, or every operation would match the same records"}},
		{desc: "parameters only in literals and comments count for nothing", modify: func(c *postgres.Config) {
			c.Query = "SELECT id FROM t WHERE op_key = '@op_key' -- @recipient"
		}, want: []string{"query: must use @op_key or @recipient, or every operation would match the same records"}},
		{desc: "unknown parameters, names case-sensitive", modify: func(c *postgres.Config) {
			c.Query = valid + " AND tenant = @tenant AND x = @OP_KEY AND doc @@to_tsquery('a')"
		}, want: []string{
			"query: unknown parameter @tenant: the parameters are @op_key, @recipient, @action, @payload_hash, @since, @until",
			"query: unknown parameter @OP_KEY: the parameters are @op_key, @recipient, @action, @payload_hash, @since, @until",
			"query: unknown parameter @to_tsquery: the parameters are @op_key, @recipient, @action, @payload_hash, @since, @until",
		}},
		{desc: "positional parameter", modify: func(c *postgres.Config) { c.Query = valid + " AND recipient = $2" },
			want: []string{"query: positional parameter $2: use the named parameters @op_key, @recipient, @action, @payload_hash, @since, @until"}},
		{desc: "invalid UTF-8", modify: func(c *postgres.Config) { c.Query = valid + " AND x = '\xff'" },
			want: []string{"query: must be valid UTF-8"}},
		{desc: "max_conns zero", modify: func(c *postgres.Config) { c.MaxConns = 0 }, want: []string{"max_conns: must be between 1 and 100"}},
		{desc: "max_conns too many", modify: func(c *postgres.Config) { c.MaxConns = 101 }, want: []string{"max_conns: must be between 1 and 100"}},
		{desc: "everything wrong at once", modify: func(c *postgres.Config) { *c = postgres.Config{} }, want: []string{
			"query: required",
			"max_conns: must be between 1 and 100",
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			c := postgres.NewConfig()
			c.DSNEnv, c.Query = "MAILER_DB_DSN", valid
			tc.modify(c)
			var got []string
			for _, err := range c.Validate() {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
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
