package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sweeper/sweeper/providers"
)

// permanentSQLStates are the SQLSTATEs, or their two-character classes,
// after which asking again cannot help: the query, the role or the schema
// has to change. Everything else — connection failures (08), serialization
// failures and deadlocks (40), a cancelled statement (57014), a server
// shutting down or out of resources (53, 57, 58) — is worth asking again.
var permanentSQLStates = []string{
	"0A",    // feature not supported
	"21",    // cardinality violation
	"22",    // data exception: a cast of a parameter or a column that fails
	"25001", // active_sql_transaction: the query tried to leave read-only mode
	"25006", // read_only_sql_transaction: the query tried to write (I1)
	"28",    // invalid authorization: wrong user or password
	"3D",    // invalid catalog name: no such database
	"3F",    // invalid schema name
	"42",    // syntax error, undefined table or column, permission denied
	"54",    // program limit exceeded
}

func permanentSQLState(code string) bool {
	for _, p := range permanentSQLStates {
		if strings.HasPrefix(code, p) {
			return true
		}
	}
	return false
}

// statementSQLStates are the SQLSTATE classes whose messages speak of the
// statement, the schema, the role or the server — a column that does not
// exist, a permission denied, a server shutting down — and quote no
// value of the database's rows: their messages are kept as PostgreSQL
// words them. Any other message — a data exception quoting the value it
// could not take, an integrity violation, a function's RAISE — is the
// provider's free text, kept as a [providers.ProviderText].
var statementSQLStates = []string{"08", "0A", "25", "28", "3D", "3F", "40", "42", "53", "54", "55", "57", "58"}

func statementSQLState(code string) bool {
	for _, p := range statementSQLStates {
		if strings.HasPrefix(code, p) {
			return true
		}
	}
	return false
}

// failure turns an error of step into what Lookup returns: the caller's
// cancellation as is, a deadline as transient, and the database's errors
// classified by SQLSTATE. The text is redacted and the database's error is
// not kept in the chain: a PgError's Detail and Where, and a driver error's
// text, may carry a bound value (the recipient) or, in principle, the DSN.
func (a *Adapter) failure(ctx context.Context, step string, err error, q providers.Query) error {
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.Canceled):
		return ctxErr // the caller gave up: not the provider's answer
	case ctxErr != nil:
		return providers.Transient(fmt.Errorf("%s: %s: no answer before the deadline: %w", a.name, step, ctxErr))
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if pgErr.Code == "25006" {
			step += " refused: it tries to write, and sweeper only reads"
		}
		var failed error
		if statementSQLState(pgErr.Code) {
			failed = fmt.Errorf("%s: %s: %s", a.name, step, a.redact(pgErr.Error(), q))
		} else {
			// The message can quote a value of the database's rows: kept
			// apart, its error a length and a digest.
			failed = fmt.Errorf("%s: %s: %s (SQLSTATE %s): %w", a.name, step, pgErr.Severity, pgErr.Code,
				providers.Quote(a.redact(pgErr.Message, q)))
		}
		if permanentSQLState(pgErr.Code) {
			return providers.Permanent(failed)
		}
		return providers.Transient(failed)
	}
	// Connection refused or dropped, DNS, TLS, a timeout of the driver's:
	// the database may answer later.
	return providers.Transient(fmt.Errorf("%s: %s: %s", a.name, step, a.redact(err.Error(), q)))
}

// redact removes the DSN's password and the query's recipient from an
// error's text. pgx keeps passwords out of its errors; this holds even if
// a future version does not.
func (a *Adapter) redact(text string, q providers.Query) string {
	text = redactPassword(text, a.password)
	if r := strings.TrimSpace(q.Recipient); r != "" {
		text = regexp.MustCompile(`(?i)`+regexp.QuoteMeta(r)).ReplaceAllLiteralString(text, "[recipient]")
	}
	return text
}
