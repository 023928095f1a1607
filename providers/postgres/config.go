package postgres

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sweeper/sweeper/providers"
)

// DefaultMaxConns is max_conns when the block does not set it: the default
// concurrency of a provider block, so no lookup waits for a connection.
const DefaultMaxConns = 4

// Parameters are the named parameters a query may use, bound by
// pgx.NamedArgs from the operation being looked up.
var Parameters = []string{"op_key", "recipient", "action", "payload_hash", "since", "until"}

// BatchParameters are the named parameters of the batch form: a query that
// binds @op_keys (text[]) answers for many operations in one statement,
// with @since and @until spanning every operation's window.
var BatchParameters = []string{"op_keys", "since", "until"}

// ListParameters are the named parameters of list_query: the window
// listed.
var ListParameters = []string{"since", "until"}

// Bounds of max_batch.
const (
	DefaultMaxBatch = 100
	MaxMaxBatch     = 1000
)

// Config is the kind-specific part of a postgres provider block.
type Config struct {
	// DSNEnv names the environment variable holding the connection string
	// (postgres://… or key=value), or NAME_FILE holding a file with it. The
	// string never appears in config text. Required.
	DSNEnv string `toml:"dsn_env"`
	// Query is one SQL SELECT (WITH … SELECT too) that returns the records
	// the provider database holds for an operation. It uses @op_key or
	// @recipient, and may use @action, @payload_hash, @since and @until; they
	// are bound as parameters, never spliced into the text. It runs in a
	// READ ONLY transaction. Its result has the columns id, created_at and
	// payload_hash, and may have recipient, fields, state, status and
	// op_key (see the package doc). It matches by key only when it names
	// op_key in its select list and binds @op_key (or @op_keys); otherwise
	// by resemblance. Required.
	Query string `toml:"query"`
	// MaxBatch is the most operations one statement of the batch form (a
	// query that binds @op_keys) answers for, 2 to [MaxMaxBatch]. Default
	// [DefaultMaxBatch] (0 too); ignored by a query that binds @op_key.
	MaxBatch int `toml:"max_batch"`
	// ListQuery is one SQL SELECT that returns the records carrying an
	// op_key dated in [@since, @until], with Query's columns and op_key:
	// what `sweeper audit report` reads for records no ledger row names
	// (providers.Lister). It binds only @since and @until, and runs READ
	// ONLY like Query. Only a Query that matches by key lists. Default
	// none: the adapter does not list.
	ListQuery string `toml:"list_query"`
	// MaxConns is the most connections the adapter holds open to the
	// provider database, 1 to 100. Default 4.
	MaxConns int `toml:"max_conns"`
}

// NewConfig returns a Config holding the defaults.
func NewConfig() *Config { return &Config{MaxConns: DefaultMaxConns, MaxBatch: DefaultMaxBatch} }

// ApplyDefaults implements providers.Defaulter: max_batch 0 is
// [DefaultMaxBatch].
func (c *Config) ApplyDefaults() {
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
}

// Validate implements providers.Settings. It reads the query the way
// pgx.NamedArgs does, so what it accepts is what will be bound; the
// database, not this check, is what keeps the query from writing.
func (c *Config) Validate() []error {
	var errs []error
	// dsn_env is checked by the configuration (through SecretEnvs):
	// required, a valid name, set in the environment.
	errs = append(errs, validateQuery(c.Query)...)
	if c.ListQuery != "" {
		errs = append(errs, validateListQuery(c.ListQuery)...)
	}
	if c.MaxBatch != 0 && (c.MaxBatch < 2 || c.MaxBatch > MaxMaxBatch) {
		errs = append(errs, fmt.Errorf("max_batch: must be between 2 and %d", MaxMaxBatch))
	}
	if c.MaxConns < 1 || c.MaxConns > 100 {
		errs = append(errs, errors.New("max_conns: must be between 1 and 100"))
	}
	return errs
}

func validateQuery(query string) []error {
	if strings.TrimSpace(query) == "" {
		return []error{errors.New("query: required")}
	}
	if !utf8.ValidString(query) {
		return []error{errors.New("query: must be valid UTF-8")}
	}
	text := scanSQL(query)
	var errs []error
	if text.afterSemicolon {
		errs = append(errs, errors.New("query: must be one statement: found more SQL after ';'"))
	}
	if !strings.EqualFold(text.firstWord, "select") && !strings.EqualFold(text.firstWord, "with") {
		errs = append(errs, errors.New("query: must be a SELECT (or WITH … SELECT)"))
	}
	if text.positional != "" {
		errs = append(errs, fmt.Errorf("query: positional parameter %s: use the named parameters @%s", text.positional, strings.Join(Parameters, ", @")))
	}
	output := selectOpKey(query)
	returns := output == opKeyStored
	if output == opKeyFromParameter {
		errs = append(errs, errors.New("query: op_key in the select list is computed from a parameter: return the op_key each row is stored under, which sweeper compares with the operation's"))
	}
	if slices.Contains(text.params, "op_keys") {
		// The batch form: one statement for many operations.
		if !returns {
			errs = append(errs, errors.New("query: a query that binds @op_keys must name op_key in its select list (op_key, t.op_key or … AS op_key): each row says which operation it answers for"))
		}
		for _, p := range text.params {
			switch {
			case slices.Contains(BatchParameters, p):
			case slices.Contains(Parameters, p):
				errs = append(errs, fmt.Errorf("query: @%s is one operation's, and a query that binds @op_keys answers for many: it may use only @%s", p, strings.Join(BatchParameters, ", @")))
			default:
				errs = append(errs, fmt.Errorf("query: unknown parameter @%s: a query that binds @op_keys may use @%s", p, strings.Join(BatchParameters, ", @")))
			}
		}
		return errs
	}
	if !slices.Contains(text.params, "op_key") && !slices.Contains(text.params, "recipient") {
		errs = append(errs, errors.New("query: must use @op_key or @recipient, or every operation would match the same records"))
	} else if returns && !slices.Contains(text.params, "op_key") {
		errs = append(errs, errors.New("query: returns op_key, so it matches by key, but does not bind @op_key: select rows by op_key = @op_key, or return no op_key to match by resemblance"))
	}
	for _, p := range text.params {
		if !slices.Contains(Parameters, p) {
			errs = append(errs, fmt.Errorf("query: unknown parameter @%s: the parameters are @%s", p, strings.Join(Parameters, ", @")))
		}
	}
	return errs
}

// validateListQuery checks list_query: one SELECT, binding only
// @since and @until, naming op_key in its select list.
func validateListQuery(query string) []error {
	if !utf8.ValidString(query) {
		return []error{errors.New("list_query: must be valid UTF-8")}
	}
	text := scanSQL(query)
	var errs []error
	if text.afterSemicolon {
		errs = append(errs, errors.New("list_query: must be one statement: found more SQL after ';'"))
	}
	if !strings.EqualFold(text.firstWord, "select") && !strings.EqualFold(text.firstWord, "with") {
		errs = append(errs, errors.New("list_query: must be a SELECT (or WITH … SELECT)"))
	}
	if text.positional != "" {
		errs = append(errs, fmt.Errorf("list_query: positional parameter %s: use the named parameters @%s", text.positional, strings.Join(ListParameters, ", @")))
	}
	if selectOpKey(query) != opKeyStored {
		errs = append(errs, errors.New("list_query: must name op_key in its select list (op_key, t.op_key or … AS op_key), not computed from a parameter: each row says which operation it carries"))
	}
	for _, p := range text.params {
		if !slices.Contains(ListParameters, p) {
			errs = append(errs, fmt.Errorf("list_query: unknown parameter @%s: list_query may use @%s", p, strings.Join(ListParameters, ", @")))
		}
	}
	return errs
}

// Notes implements providers.Noter: a query that binds @op_key but returns
// no op_key column is valid, and matches by resemblance — which its author
// may not have meant.
func (c *Config) Notes() []string {
	if slices.Contains(scanSQL(c.Query).params, "op_key") && !returnsOpKey(c.Query) {
		return []string{"query: binds @op_key but returns no op_key column, so it matches by resemblance (the operation's own window, a recipient on each row, no look-alike operation pending); return the op_key each row is stored under (op_key, or … AS op_key) to match by key"}
	}
	return nil
}

// SecretEnvs implements providers.SecretHolder.
func (c *Config) SecretEnvs() []providers.SecretEnv {
	return []providers.SecretEnv{{Key: "dsn_env", Name: c.DSNEnv, Required: true}}
}

// sqlText is what validation needs to know of a query's text.
type sqlText struct {
	params         []string // distinct @names, in order of first use
	positional     string   // the first $n placeholder, if any
	firstWord      string   // the first keyword, after comments and '('
	afterSemicolon bool     // something other than space or comments follows a ';'
}

// scanSQL reads query as pgx.NamedArgs does (named_args.go in pgx v5):
// string constants ('…', E'…' with backslash escapes, $tag$…$tag$), quoted
// identifiers and comments (--, nested /* */) are skipped, and @ followed by
// an ASCII letter or '_' starts a name of ASCII letters, digits and '_'. So
// "a @> b" and "x @@ y" are operators, but "x @@to_tsquery(…)" names a
// parameter, as it does for pgx.
func scanSQL(query string) sqlText {
	var t sqlText
	ended := false // a ';' was seen outside literals and comments
	n := len(query)
	for i := 0; i < n; {
		c := query[i]
		switch {
		case (c == 'e' || c == 'E') && i+1 < n && query[i+1] == '\'':
			i = skipQuoted(query, i+2, '\'', true)
		case c == '\'':
			i = skipQuoted(query, i+1, '\'', false)
		case c == '"':
			i = skipQuoted(query, i+1, '"', false)
		case c == '-' && i+1 < n && query[i+1] == '-':
			end := strings.IndexAny(query[i:], "\r\n")
			if end < 0 {
				return t
			}
			i += end + 1
			continue
		case c == '/' && i+1 < n && query[i+1] == '*':
			i = skipBlockComment(query, i+2)
			continue
		case c == '$':
			if after, ok := skipDollarQuoted(query, i); ok {
				i = after
			} else {
				j := i + 1
				for j < n && isDigit(query[j]) {
					j++
				}
				if j > i+1 && t.positional == "" {
					t.positional = query[i:j]
				}
				i = max(j, i+1)
			}
		case c == '@' && i+1 < n && (isASCIILetter(query[i+1]) || query[i+1] == '_'):
			j := i + 1
			for j < n && (isASCIILetter(query[j]) || isDigit(query[j]) || query[j] == '_') {
				j++
			}
			if name := query[i+1 : j]; !slices.Contains(t.params, name) {
				t.params = append(t.params, name)
			}
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < n && (isIdentStart(query[j]) || isDigit(query[j]) || query[j] == '$') {
				j++
			}
			if t.firstWord == "" && !ended {
				t.firstWord = query[i:j]
			}
			i = j
		case c == ';':
			ended = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		default:
			i++
		}
		// Anything read by the cases that fall through here is SQL.
		if ended {
			t.afterSemicolon = true
		}
	}
	return t
}

// skipQuoted returns the index after the closing quote of a literal or
// quoted identifier opened just before i; a doubled quote stands for one.
func skipQuoted(s string, i int, quote byte, backslashEscapes bool) int {
	for i < len(s) {
		switch c := s[i]; {
		case backslashEscapes && c == '\\':
			i += 2
		case c == quote && i+1 < len(s) && s[i+1] == quote:
			i += 2
		case c == quote:
			return i + 1
		default:
			i++
		}
	}
	return len(s)
}

// skipBlockComment returns the index after the */ that closes a comment
// opened just before i; comments nest, as in PostgreSQL.
func skipBlockComment(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(s[i:], "*/"):
			i += 2
			if depth == 0 {
				return i
			}
			depth--
		default:
			i++
		}
	}
	return len(s)
}

// skipDollarQuoted returns the index just past the dollar-quoted string
// ($$…$$, $tag$…$tag$) that starts at query[i], or the end of query when
// it is never closed; ok is false when no dollar quote starts there (a
// positional parameter, $1).
func skipDollarQuoted(query string, i int) (after int, ok bool) {
	tagLen, ok := dollarTag(query[i+1:])
	if !ok {
		return i, false
	}
	tag := query[i : i+tagLen+2]
	end := strings.Index(query[i+len(tag):], tag)
	if end < 0 {
		return len(query), true
	}
	return i + len(tag) + end + len(tag), true
}

// dollarTag reports the length of the tag of a dollar quote whose opening
// '$' was just before s, and whether s starts one: an optional identifier
// without '$', then '$'.
func dollarTag(s string) (int, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '$' {
			return i, true
		}
		if !isIdentStart(c) && (i == 0 || !isDigit(c)) {
			return 0, false
		}
	}
	return 0, false
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool       { return c >= '0' && c <= '9' }

// isIdentStart is true for a byte that can start an unquoted identifier;
// every byte of a multi-byte UTF-8 character counts as a letter.
func isIdentStart(c byte) bool { return isASCIILetter(c) || c == '_' || c >= 0x80 }
