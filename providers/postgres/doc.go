// Package postgres is the adapter of kind "postgres": a provider whose
// records are in a PostgreSQL database you control (a service's own outbox,
// a sent-mail log, a replica of a billing table). It holds the only
// connection pool an adapter keeps, ended by [Adapter.Close]
// (providers.Provider.Close at shutdown).
//
// Its block holds one SELECT, run for each operation with the operation's
// key bound as named parameters:
//
//	[providers.mailer_db]
//	kind = "postgres"
//	dsn_env = "MAILER_DB_DSN"
//	query = '''
//	SELECT id, created_at, body_hash AS payload_hash, recipient
//	FROM sent_emails
//	WHERE op_key = @op_key AND created_at BETWEEN @since AND @until
//	'''
//
// Parameters: @op_key, @recipient, @action, @payload_hash (text), @since and
// @until (timestamptz). They are bound by pgx.NamedArgs, never written into
// the SQL text.
//
// Result columns, matched by name (others are ignored):
//
//	id            required; text (varchar, char), an integer type, numeric
//	              or uuid, read as text. A NULL or empty id fails the
//	              lookup: a row is never silently dropped.
//	created_at    required; timestamptz (or timestamp, date). NULL: unknown.
//	payload_hash  required; text, the ledger's payload hash of the record.
//	              NULL or '': computed from fields when there are fields,
//	              else the record cannot prove its payload.
//	recipient     optional; text.
//	fields        optional; a JSON object (jsonb, json or text): the
//	              record's normalized fields, as the ledger's payload would
//	              hold them. Read strictly: a key twice, or two keys that
//	              differ only in letter case, is an error.
//
// # Batch form
//
// A query that binds @op_keys instead of @op_key answers for many
// operations in one statement (up to max_batch, default 100): the
// operations' keys are bound as one text[], and @since and @until span
// every operation's window (each record's date is still checked against
// its own operation's). It may use no other parameter, and its result has
// one more required column, op_key (text): the operation each row answers
// for, compared exactly.
//
//	query = '''
//	SELECT op_key, id, created_at, body_hash AS payload_hash, recipient
//	FROM sent_emails
//	WHERE op_key = ANY(@op_keys) AND created_at BETWEEN @since AND @until
//	'''
//
// A row for an op_key that was not asked (or NULL) fails every operation
// of the statement, transiently: such a query does not select by op_key,
// and none of its rows can be attributed. A row that is no record, more
// than MaxRows rows for one op_key or a repeated id with other content
// fails only the operation it names; the same id under two op_keys proves
// neither. A query that binds @op_key keeps answering one operation per
// statement.
//
// Text columns may also be of a type defined in the database (citext, an
// enum), read as text. A result without id, created_at or payload_hash, or
// with one of them of another type (an integer payload_hash, a boolean id),
// is a permanent error naming the column and its type, as is one of more
// than [MaxRows] rows: the query is too broad to decide on.
//
// Rows with the same id are one record when they agree on every column (a
// join that repeats a row); with the same id and different content they
// are a permanent error naming the column that differs.
//
// The query runs in a READ ONLY transaction that is always rolled back, so
// the database itself refuses a query that tries to write — a data-modifying
// CTE, SELECT … FOR UPDATE, nextval(), a function that writes (I1). Read-only
// mode does not stop everything a superuser could reach (dblink, temporary
// tables); give the adapter a role that can only SELECT what it needs, e.g.
//
//	CREATE ROLE sweeper_lookup LOGIN PASSWORD '…';
//	GRANT SELECT ON sent_emails TO sweeper_lookup;
//	ALTER ROLE sweeper_lookup SET default_transaction_read_only = on;
//
// # Matching
//
// A query that binds @op_key or @op_keys selects records by the
// operation's key; one that does not (it searches by @recipient and time)
// matches by resemblance, and its records are proof only inside the
// operation's own window and when no other operation could own them.
//
// # Errors
//
// Connection failures, timeouts, serialization failures and a
// deadline are transient; syntax errors, undefined tables or columns,
// permission denied, bad credentials and a refused write are permanent. No
// error carries the DSN's password or the recipient.
package postgres
