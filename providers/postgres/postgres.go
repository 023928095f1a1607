package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the postgres adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("postgres", NewConfig, New)

// MaxRows is the most rows a query may return for one operation.
const MaxRows = 100

// cancelGrace is how long a statement whose context ended may take to stop
// after the cancel request before its connection is closed.
const cancelGrace = 500 * time.Millisecond

// Adapter looks operations up with a query on a provider's database.
type Adapter struct {
	name     string
	query    string
	list     string // list_query; "": the adapter does not list
	password string // only to redact it from errors
	pool     *pgxpool.Pool
	batch    int // the batch form's max_batch; 0: the single form
	// byKey: the query returns op_key and binds @op_key or @op_keys (see
	// [Adapter.Matching]); each row's op_key must be the operation's.
	byKey bool
}

var (
	_ providers.MatchingLookup = (*Adapter)(nil)
	_ providers.BatchLookup    = (*Adapter)(nil)
	_ providers.Lister         = (*Adapter)(nil)
)

// New returns an adapter running cfg's query (validated) on the database
// whose connection string is in the variable dsn_env names (or its
// NAME_FILE), read from env. The pool is made here and connects on the
// first lookup, so New does not fail on an unreachable database. It lives
// as long as the adapter: [Adapter.Close] ends it, which
// providers.Provider.Close calls at shutdown.
//
// A DSN asking for pgx's simple protocol (default_query_exec_mode=
// simple_protocol) is run with the extended protocol anyway, so that the
// parameters are bound by the server and a second statement is refused.
//
// max_conns replaces a pool_max_conns the DSN may set. The error, for a dsn
// that cannot be parsed, does not quote the dsn.
//
// env.Transport and env.Logger are not used: the adapter speaks
// PostgreSQL's protocol, made read-only by its transaction.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	// The error names the variable, never its value.
	dsn, err := config.BlockSecret(env.Var, "dsn_env", cfg.DSNEnv)
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN, redacted on a best-effort basis
		// only: none of their text is kept.
		return nil, errors.New("dsn_env: the variable does not hold a valid PostgreSQL connection string")
	}
	pcfg.MaxConns = int32(min(max(cmp.Or(cfg.MaxConns, DefaultMaxConns), 1), 100))
	cc := pcfg.ConnConfig
	if cc.DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol {
		cc.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	if _, set := cc.RuntimeParams["application_name"]; !set {
		cc.RuntimeParams["application_name"] = "sweeper"
	}
	// On a context's end, ask the server to cancel the statement (so a slow
	// query does not keep running on the provider's database), and close
	// the connection if that has not ended it within cancelGrace.
	cc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		return nil, fmt.Errorf("dsn_env: connection pool: %s", redactPassword(err.Error(), cc.Password))
	}
	a := &Adapter{name: name, query: cfg.Query, list: cfg.ListQuery, password: cc.Password, pool: pool, byKey: byKey(cfg.Query)}
	if batchForm(cfg.Query) {
		d := *cfg
		d.ApplyDefaults()
		a.batch = d.MaxBatch
	}
	return a, nil
}

// Close closes the adapter's connections; Lookup must not be called after.
func (a *Adapter) Close() { a.pool.Close() }

// Lookup implements providers.Lookup. It runs the query in a READ ONLY
// transaction and rolls it back. Errors are classified (see the package
// doc); a cancelled ctx returns ctx.Err() promptly.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if a.batch > 0 {
		// The batch form: one operation is a batch of one.
		answers, err := a.LookupBatch(ctx, []providers.Query{q})
		if err != nil {
			return nil, err
		}
		return answers[0].Records, answers[0].Err
	}
	tx, err := a.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, a.failure(ctx, "begin read-only transaction", err, q)
	}
	// Nothing is ever committed. With ctx ended, the rollback closes the
	// connection at once instead of waiting for the server.
	defer tx.Rollback(ctx) //nolint:errcheck // a failed rollback closes the connection, which ends the transaction
	return a.records(ctx, tx, q)
}

// columns holds the index of each column of the contract in a result, -1
// when it has none.
type columns struct {
	id, createdAt, payloadHash, recipient, fields int
	opKey                                         int // a query that matches by key's only
	state, status                                 int
}

// columnType is what a column of the contract may be: the types PostgreSQL
// gives that are read as the contract says.
type columnType struct {
	oids []uint32
	// text: a type defined in the database (an extension's, citext; an
	// enum) is read in its text form too.
	text bool
	want string
}

var textOIDs = []uint32{pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UnknownOID}

// columnTypes: a column of another type is a query to fix (a permanent
// error naming it), not a value to read somehow — an integer payload_hash
// read as its digits would only ever be a silent payload_mismatch.
var columnTypes = map[string]columnType{
	"id": {oids: append([]uint32{pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.NumericOID, pgtype.UUIDOID}, textOIDs...),
		text: true, want: "text, varchar, char, an integer type, numeric or uuid"},
	"created_at":   {oids: []uint32{pgtype.TimestamptzOID, pgtype.TimestampOID, pgtype.DateOID}, want: "timestamptz, timestamp or date"},
	"payload_hash": {oids: textOIDs, text: true, want: "text (a bytea hash: encode(col, 'hex'))"},
	"recipient":    {oids: textOIDs, text: true, want: "text"},
	"fields":       {oids: append([]uint32{pgtype.JSONBOID, pgtype.JSONOID}, textOIDs...), want: "jsonb, json or text"},
	"op_key":       {oids: textOIDs, text: true, want: "text"},
	"state":        {oids: textOIDs, text: true, want: "text (effect, in_flight or failed)"},
	"status":       {oids: textOIDs, text: true, want: "text"},
}

// firstUserOID is where the OIDs of types defined in a database start
// (FirstNormalObjectId): below it, built-in types.
const firstUserOID = 16384

// checkType returns an error naming the column and its type when the
// column's type is not one the contract allows.
func checkType(f pgconn.FieldDescription, types *pgtype.Map) error {
	ct := columnTypes[f.Name]
	if slices.Contains(ct.oids, f.DataTypeOID) || (ct.text && f.DataTypeOID >= firstUserOID) {
		return nil
	}
	name := fmt.Sprintf("type OID %d", f.DataTypeOID)
	if t, ok := types.TypeForOID(f.DataTypeOID); ok {
		name = t.Name
	}
	return fmt.Errorf("column %s is %s; want %s", f.Name, name, ct.want)
}

// columnsOf finds the contract's columns in a result; op_key is one of
// them, and required, when byKey (a query that matches by key, or the
// batch form) only: a query that matches by resemblance may return it, and
// it is not read.
func columnsOf(fields []pgconn.FieldDescription, types *pgtype.Map, byKey bool) (columns, error) {
	c := columns{-1, -1, -1, -1, -1, -1, -1, -1}
	for i, f := range fields {
		var idx *int
		switch f.Name {
		case "op_key":
			if !byKey {
				continue
			}
			idx = &c.opKey
		case "state":
			idx = &c.state
		case "status":
			idx = &c.status
		case "id":
			idx = &c.id
		case "created_at":
			idx = &c.createdAt
		case "payload_hash":
			idx = &c.payloadHash
		case "recipient":
			idx = &c.recipient
		case "fields":
			idx = &c.fields
		default:
			continue
		}
		if *idx >= 0 {
			return c, fmt.Errorf("the result has two columns named %s", f.Name)
		}
		if err := checkType(f, types); err != nil {
			return c, err
		}
		*idx = i
	}
	for _, required := range []struct {
		name string
		idx  int
	}{{"id", c.id}, {"created_at", c.createdAt}, {"payload_hash", c.payloadHash}} {
		if required.idx < 0 {
			return c, fmt.Errorf("the result has no %s column (required: id, created_at, payload_hash)", required.name)
		}
	}
	if byKey && c.opKey < 0 {
		// The batch form attributes rows by it; and a query that matches
		// by key was read as returning it, from its text.
		return c, errors.New("the result has no op_key column: a query that binds @op_keys, or names op_key in its select list, must return the op_key each row is held under")
	}
	return c, nil
}

func (a *Adapter) records(ctx context.Context, tx pgx.Tx, q providers.Query) ([]providers.Record, error) {
	rows, err := a.scan(ctx, tx, a.query, pgx.NamedArgs{
		"op_key":       q.OpKey,
		"recipient":    q.Recipient,
		"action":       q.Action,
		"payload_hash": q.PayloadHash,
		"since":        q.Since,
		"until":        q.Until,
	}, q, false, MaxRows, "more than %d rows for one operation: narrow the query")
	if err != nil {
		return nil, err
	}
	records := make([]providers.Record, len(rows))
	for i, r := range rows {
		if a.byKey && (!r.opKey.Valid || r.opKey.String != q.OpKey) {
			// Exactly: op_keys that differ only in letter case are two
			// operations, and a row without one is no operation's by key.
			return nil, providers.Malformed(fmt.Errorf("%s: query: malformed answer: row %d is for another op_key than the one asked, or none: a query that returns op_key matches by key, and must return only rows held under op_key = @op_key", a.name, i))
		}
		records[i] = r.rec
	}
	return a.merge(records)
}

// merge makes the rows of one operation its records: a join may repeat a
// row, and the copies are one record, not several (which would read as
// multiple_matches) — when they agree.
func (a *Adapter) merge(records []providers.Record) ([]providers.Record, error) {
	merged, err := providers.MergeDuplicates(records)
	var dup *providers.DuplicateError
	if errors.As(err, &dup) {
		return nil, providers.Permanent(fmt.Errorf("%s: query: malformed answer: rows %d and %d have the same id %q but different %s; a query that repeats a row must repeat it identically",
			a.name, dup.First, dup.Second, safetext.Truncate(dup.ID, 64), dup.Field))
	}
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: query: %w", a.name, err))
	}
	return merged, nil
}

// row is one row of a result: its record, or (in the batch form) why it is
// not one, and in the batch form the op_key it answers for.
type row struct {
	opKey pgtype.Text
	rec   providers.Record
	err   error
}

// scan runs query (the block's query or list_query) with args and reads its rows. A result of more than
// limit rows is a permanent error (tooMany, given limit, says why). Outside
// the batch form a row that is no record ends the scan with its error; in
// it, the row carries its error, for the operation it names. q is only for
// redacting errors.
func (a *Adapter) scan(ctx context.Context, tx pgx.Tx, query string, args pgx.NamedArgs, q providers.Query, batch bool, limit int, tooMany string) ([]row, error) {
	// Stopping early (too many rows) cancels the statement rather than read
	// the rest of its result.
	queryCtx, stop := context.WithCancel(ctx)
	defer stop()
	rows, err := tx.Query(queryCtx, query, args)
	if err != nil {
		return nil, a.failure(ctx, "query", err, q)
	}
	defer rows.Close()
	// Most errors of the statement (a refused write, permission denied)
	// come with its first result, and a failed statement has no columns:
	// they are looked at before the columns are.
	more := rows.Next()
	if err := rows.Err(); !more && err != nil {
		return nil, a.failure(ctx, "query", err, q)
	}
	cols, err := columnsOf(rows.FieldDescriptions(), tx.Conn().TypeMap(), a.byKey || batch)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: query: %w", a.name, err))
	}

	out := []row{}
	dest := make([]any, len(rows.FieldDescriptions())) // nil: column skipped
	for ; more; more = rows.Next() {
		if len(out) == limit {
			stop()
			return nil, providers.Permanent(fmt.Errorf("%s: query: "+tooMany, a.name, limit))
		}
		var (
			id, opKey              pgtype.Text
			createdAt              *time.Time
			payloadHash, recipient *string
			state, status          *string
			fields                 []byte
		)
		dest[cols.id], dest[cols.createdAt], dest[cols.payloadHash] = &id, &createdAt, &payloadHash
		if cols.recipient >= 0 {
			dest[cols.recipient] = &recipient
		}
		if cols.fields >= 0 {
			dest[cols.fields] = &fields
		}
		if cols.opKey >= 0 {
			dest[cols.opKey] = &opKey
		}
		if cols.state >= 0 {
			dest[cols.state] = &state
		}
		if cols.status >= 0 {
			dest[cols.status] = &status
		}
		if err := rows.Scan(dest...); err != nil {
			if ctx.Err() != nil {
				return nil, a.failure(ctx, "read rows", err, q)
			}
			// A column of a type the contract does not allow.
			return nil, providers.Permanent(fmt.Errorf("%s: row %d: %s", a.name, len(out), a.redact(err.Error(), q)))
		}
		rec, err := a.record(len(out), id, createdAt, payloadHash, recipient, fields)
		if err == nil {
			err = a.state(len(out), &rec, state, status)
		}
		if err != nil && !batch {
			return nil, err
		}
		out = append(out, row{opKey: opKey, rec: rec, err: err})
	}
	if err := rows.Err(); err != nil {
		return nil, a.failure(ctx, "query", err, q)
	}
	return out, nil
}

func (a *Adapter) record(i int, id pgtype.Text, createdAt *time.Time, payloadHash, recipient *string, fields []byte) (providers.Record, error) {
	if !id.Valid || strings.TrimSpace(id.String) == "" {
		// Transient, as a provider's record without an id is: the row may
		// be half-written, and it must not read as "not found".
		return providers.Record{}, providers.Transient(fmt.Errorf("%s: row %d has a NULL or empty id", a.name, i))
	}
	rec := providers.Record{ID: id.String}
	if createdAt != nil {
		rec.CreatedAt = *createdAt
	}
	if recipient != nil {
		rec.Recipient = *recipient
	}
	if payloadHash != nil {
		rec.PayloadHash = *payloadHash
	}
	if fields != nil && !bytes.Equal(bytes.TrimSpace(fields), []byte("null")) {
		// Strictly, numbers as written (not rounded through float64): a
		// json or text column keeps a key twice, which encoding/json would
		// read as its last value.
		if err := providers.DecodeJSON(fields, &rec.Fields); err != nil {
			return providers.Record{}, providers.Permanent(fmt.Errorf("%s: row %d (id %s): fields is not a JSON object: %w", a.name, i, safetext.Truncate(rec.ID, 64), err))
		}
		if rec.Fields == nil {
			return providers.Record{}, providers.Permanent(fmt.Errorf("%s: row %d (id %s): fields is not a JSON object", a.name, i, safetext.Truncate(rec.ID, 64)))
		}
		if rec.PayloadHash == "" {
			h, err := ledger.PayloadHashOf(rec.Fields)
			if err != nil {
				return providers.Record{}, providers.Permanent(fmt.Errorf("%s: row %d (id %s): payload hash of fields: %w", a.name, i, safetext.Truncate(rec.ID, 64), err))
			}
			rec.PayloadHash = h
		}
	}
	rec.Excerpt = fmt.Sprintf("%s row id=%s", a.name, safetext.Truncate(rec.ID, 64))
	if !rec.CreatedAt.IsZero() {
		rec.Excerpt += " created_at=" + rec.CreatedAt.UTC().Format(time.RFC3339)
	}
	return rec, nil
}

// states are the words a state column may hold: those of the http
// protocol.
var states = []providers.State{providers.StateEffect, providers.StateInFlight, providers.StateFailed}

// maxStatus bounds a record's status, in bytes: it is for people, and a
// longer one is cut short rather than refused.
const maxStatus = 200

// state sets rec's State and Status from the row's state and status
// columns (nil: NULL, or no such column). A NULL state is the effect; a
// word that is none of [states] is a malformed answer (transient, as a
// provider's unknown state is), never a record read as the effect.
func (a *Adapter) state(i int, rec *providers.Record, state, status *string) error {
	if status != nil {
		rec.Status = safetext.Truncate(*status, maxStatus)
	}
	if state == nil {
		return nil
	}
	rec.State = providers.State(*state)
	if !slices.Contains(states, rec.State) {
		return providers.Malformed(fmt.Errorf("%s: row %d (id %s): state %q is none of effect, in_flight, failed", a.name, i, safetext.Truncate(rec.ID, 64), safetext.Truncate(*state, 32)))
	}
	return nil
}

func redactPassword(text, password string) string {
	if password == "" {
		return text
	}
	return strings.ReplaceAll(text, password, "xxxxx")
}
