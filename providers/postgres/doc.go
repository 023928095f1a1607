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
//	SELECT op_key, id, created_at, body_hash AS payload_hash, recipient
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
//	op_key        optional; text: the op_key the row is stored under. A
//	              query that returns it (and binds @op_key) matches by key,
//	              and every row's op_key must be the operation's, exactly
//	              (see Matching).
//	state         optional; text: "effect" (also NULL: the row is the
//	              effect), "in_flight" (still being made) or "failed" (the
//	              attempt failed), the words of the http protocol. Any
//	              other is a malformed answer (transient). Only an effect
//	              proves the operation done.
//	status        optional; text: the provider's own word for the row's
//	              state, for people; cut to 200 bytes.
//
// # Batch form
//
// A query that binds @op_keys instead of @op_key answers for many
// operations in one statement (up to max_batch, default 100): the
// operations' keys are bound as one text[], and @since and @until span
// every operation's window (each record's date is still checked against
// its own operation's). It may use no other parameter, and its result has
// one more required column, op_key (text), named in its select list: the
// operation each row answers for, compared exactly.
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
// A query matches by key only when it returns an op_key column and binds
// @op_key (or @op_keys): each row's op_key is then compared with the
// operation's, exactly — a row whose op_key is another, in another letter
// case or NULL (a keyless row a WHERE … OR clause let through) is a
// malformed answer, retried and then a lookup_failed ticket, never a
// record. Any other query matches by resemblance, whatever its WHERE
// clause binds — "WHERE op_key = @op_key OR (op_key IS NULL AND recipient
// = @recipient)" without op_key in its select list included: its rows
// cannot show whose they are, so they are proof only inside the
// operation's own window, carrying a recipient, and when no other
// operation could own them.
//
// Which it is, is read from the query's text when the adapter is made, not
// asked of the database (the adapter is made without connecting, and every
// replica must decide alike): the select list of the outermost SELECT
// (after WITH; the first of a UNION) names op_key when an item is the
// column op_key (op_key, t.op_key, "op_key", op_key::text) or is aliased
// op_key (meta->>'op_key' AS op_key). An item computed from a parameter
// (@op_key AS op_key) is refused by validation: it would make every row
// agree. What the text cannot show — SELECT *, a query in parentheses — is
// read as no op_key: resemblance, the stricter rule; name op_key in the
// select list. Every result is checked against the reading: a query read
// as returning op_key whose result has no op_key column is a permanent
// error. A query that returns op_key without binding @op_key or @op_keys
// is refused by validation.
//
// # Listing
//
// A block whose query matches by key may add list_query: one SELECT
// binding only @since and @until that returns op_key and the query's
// columns for every record dated in that window, run READ ONLY like the
// query. The adapter then lists ([Adapter.List], providers.Lister) for
// `sweeper audit report`, which names the records no ledger row holds.
// More than [MaxListRows] rows, or a row with no op_key, is an error,
// never part of an answer.
//
// # Errors
//
// Connection failures, timeouts, serialization failures and a
// deadline are transient; syntax errors, undefined tables or columns,
// permission denied, bad credentials and a refused write are permanent. No
// error carries the DSN's password or the recipient.
package postgres
