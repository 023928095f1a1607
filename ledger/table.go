package ledger

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
)

// NativeTable is the table sweeper's migrations create and the ledger
// contract describes: ledger.operations, with sweeper's column names and
// status words.
const NativeTable = "ledger.operations"

// ColumnNames are sweeper's names for the ledger's columns, in the order
// an [Operation] is read. A [Mapping] maps each to a column of its table.
var ColumnNames = []string{"id", "op_key", "workflow", "provider", "action", "source_id", "recipient",
	"payload_hash", "payload", "status", "attempts", "first_attempt_at", "last_attempt_at",
	"provider_record_id", "created_at", "updated_at"}

// RequiredColumns are the columns an adopted table must have: without
// them an operation cannot be found, told from another, proven or
// settled. The others may be absent, at a cost [Absence] states.
var RequiredColumns = []string{"id", "op_key", "provider", "status", "payload_hash", "first_attempt_at", "provider_record_id"}

// NotNullColumns are the [RequiredColumns] an adopted table must hold a
// value in on every row: `sweeper adopt` refuses a column of them that
// allows NULL, and its guards refuse a NULL written into one.
// provider_record_id is NULL until the operation is done.
var NotNullColumns = []string{"id", "op_key", "provider", "status", "payload_hash", "first_attempt_at"}

// Absence says what sweeper reads in place of a column an adopted table
// does not have, and what that costs.
var Absence = map[string]string{
	"workflow":        "the table's own name: silences and routes match it as the workflow",
	"action":          `"send": an adapter that tells an authorisation from a capture (stripe) takes every operation for a capture`,
	"source_id":       "nothing: evidence does not name the workflow's own record",
	"recipient":       "nothing: only lookups by op_key prove; an adapter that searches by recipient finds no candidate and the operation goes to review",
	"payload":         "nothing: evidence does not show the fields behind the hash",
	"attempts":        "1",
	"last_attempt_at": "nothing: a retried operation's window is counted from its first attempt only",
	"created_at":      "first_attempt_at",
	"updated_at":      "last_attempt_at, or first_attempt_at: an incident's settled-since count is approximate",
}

// Mapping names a table that holds the operations, the table's column for
// each of sweeper's ([ColumnNames]) and its word for each status. The zero
// Mapping is [NativeTable] as the migrations create it.
type Mapping struct {
	// Table is "schema.table"; empty for [NativeTable].
	Table string
	// Columns maps sweeper's name to the table's column. A name not listed
	// is the column of the same name; one listed as "" is a column the
	// table does not have (never one of [RequiredColumns]).
	Columns map[string]string
	// Statuses maps each status to the table's word for it. A status not
	// listed is its own word; failed listed as "" is a state the table
	// does not have: no resolution may then mark an operation failed.
	Statuses map[Status]string
}

// Table is a ledger table as sweeper reads and writes it: a [Mapping],
// checked, with every statement of the package rendered for it once. A
// Table is immutable and safe for concurrent use.
type Table struct {
	mapping  Mapping
	name     string            // the quoted, qualified name
	short    string            // the table's name without its schema, unquoted
	schema   string            // the schema, unquoted
	relname  string            // the table, unquoted
	columns  map[string]string // sweeper's name → quoted column, "" for absent
	words    map[Status]string // status → the table's word, "" for none
	statuses map[string]Status // the table's word → status
	sql      statements
}

// native is [NativeTable]: the zero Mapping cannot fail.
var native = func() *Table {
	t, err := Map(Mapping{})
	if err != nil {
		panic(err)
	}
	return t
}()

// Native returns [NativeTable] as the migrations create it.
func Native() *Table { return native }

// Map checks m and renders the package's statements for its table. Every
// name and word is validated and quoted here: nothing from a mapping
// reaches SQL unquoted. Its error joins one problem per key at fault, each
// starting with the key (ledger.columns.op_key: …).
func Map(m Mapping) (*Table, error) {
	t := &Table{mapping: m, columns: map[string]string{}, words: map[Status]string{}, statuses: map[string]Status{}}
	table := m.Table
	if table == "" {
		table = NativeTable
	}
	schema, rel, ok := strings.Cut(table, ".")
	if !ok || strings.Contains(rel, ".") {
		return nil, fmt.Errorf("ledger.table: %q must be schema.table (one dot): say which schema, e.g. public.%s", table, table)
	}
	for _, part := range []string{schema, rel} {
		if err := checkIdentifier(part); err != nil {
			return nil, fmt.Errorf("ledger.table: %q: %w", table, err)
		}
	}
	t.schema, t.relname, t.short = schema, rel, rel
	t.name = pgx.Identifier{schema, rel}.Sanitize()
	if t.Native() {
		// sweeper's own names need no quotes: its statements read as the
		// contract writes them.
		t.name = NativeTable
	}

	var errs []string
	for key := range m.Columns {
		if !slices.Contains(ColumnNames, key) {
			errs = append(errs, fmt.Sprintf("ledger.columns.%s: sweeper has no column of that name (it has %s)", key, strings.Join(ColumnNames, ", ")))
		}
	}
	seen := map[string]string{}
	for _, key := range ColumnNames {
		col, listed := m.Columns[key]
		if !listed {
			col = key
		}
		if col == "" {
			if slices.Contains(RequiredColumns, key) {
				errs = append(errs, fmt.Sprintf("ledger.columns.%s: required; sweeper cannot settle an operation without it", key))
			}
			t.columns[key] = ""
			continue
		}
		if err := checkIdentifier(col); err != nil {
			errs = append(errs, fmt.Sprintf("ledger.columns.%s: %q: %v", key, col, err))
			continue
		}
		if other, dup := seen[col]; dup {
			errs = append(errs, fmt.Sprintf("ledger.columns.%s: %q is already the column of %s; each of sweeper's columns needs its own", key, col, other))
			continue
		}
		seen[col] = key
		t.columns[key] = pgx.Identifier{col}.Sanitize()
		if t.Native() {
			t.columns[key] = col
		}
	}
	for s := range m.Statuses {
		if !s.Valid() {
			errs = append(errs, fmt.Sprintf("ledger.status_values.%s: sweeper has no such status (pending, done, review, failed)", s))
		}
	}
	words := map[string]Status{}
	for _, s := range []Status{StatusPending, StatusDone, StatusReview, StatusFailed} {
		word, listed := m.Statuses[s]
		if !listed {
			word = string(s)
		}
		if word == "" {
			if s != StatusFailed {
				errs = append(errs, fmt.Sprintf("ledger.status_values.%s: required; only failed may be absent", s))
			}
			continue
		}
		if err := checkWord(word); err != nil {
			errs = append(errs, fmt.Sprintf("ledger.status_values.%s: %q: %v", s, word, err))
			continue
		}
		if other, dup := words[word]; dup {
			errs = append(errs, fmt.Sprintf("ledger.status_values.%s: %q is already the word for %s; each status needs its own", s, word, other))
			continue
		}
		words[word] = s
		t.words[s] = word
		t.statuses[word] = s
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		problems := make([]error, len(errs))
		for i, e := range errs {
			problems[i] = errors.New(e)
		}
		return nil, errors.Join(problems...)
	}
	t.sql = t.render()
	return t, nil
}

// checkIdentifier refuses a name that cannot be a PostgreSQL identifier
// or that carries what only an injection would: a double quote, a
// semicolon, a control character. Mixed case, spaces and reserved words
// are fine: every name is quoted.
func checkIdentifier(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty name")
	case len(s) > 63:
		return fmt.Errorf("longer than PostgreSQL's 63 bytes")
	case strings.ContainsAny(s, `";`):
		return fmt.Errorf(`holds " or ;, which no column sweeper adopts may: sweeper quotes every name itself`)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("holds a control character")
	}
	return nil
}

// checkWord refuses a status word sweeper could not write as a literal
// plainly: empty, long, or holding a control character or a quote.
func checkWord(s string) error {
	switch {
	case len(s) > 63:
		return fmt.Errorf("longer than 63 bytes")
	case strings.ContainsAny(s, `'\`):
		return fmt.Errorf(`holds ' or \`)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("holds a control character")
	}
	return nil
}

// Name is the table's qualified name as written in SQL, quoted.
func (t *Table) Name() string { return t.name }

// Schema and Relation are the table's schema and name, unquoted, as the
// catalog holds them.
func (t *Table) Schema() string   { return t.schema }
func (t *Table) Relation() string { return t.relname }

// Native reports whether t is [NativeTable] with sweeper's own names.
func (t *Table) Native() bool {
	m := t.mapping
	return (m.Table == "" || m.Table == NativeTable) && len(m.Columns) == 0 && len(m.Statuses) == 0
}

// Column is the table's column for sweeper's name key, unquoted, and
// whether the table has one.
func (t *Table) Column(key string) (string, bool) {
	col, listed := t.mapping.Columns[key]
	if !listed {
		col = key
	}
	return col, col != ""
}

// Word is the table's word for status s, and whether it has one.
func (t *Table) Word(s Status) (string, bool) {
	w, ok := t.words[s]
	return w, ok
}

// StatusOf reads the table's word as a status; a word the mapping does not
// name is a state sweeper does not know, returned as it is (not Valid).
func (t *Table) StatusOf(word string) Status {
	if s, ok := t.statuses[word]; ok {
		return s
	}
	return Status(word)
}

// Words are the table's words of every status it has, in the order
// pending, done, review, failed.
func (t *Table) Words() []string {
	var out []string
	for _, s := range []Status{StatusPending, StatusDone, StatusReview, StatusFailed} {
		if w, ok := t.words[s]; ok {
			out = append(out, w)
		}
	}
	return out
}

// ErrNoWord: the adopted table has no word for a status sweeper was asked
// to write (failed, when the mapping leaves it out).
var ErrNoWord = errors.New("the ledger table has no word for this status")

// wordsOf are the table's words for a move from → to, as parameters.
func (t *Table) wordsOf(from, to Status) (string, string, error) {
	f, ok := t.words[from]
	if !ok {
		return "", "", fmt.Errorf("%w: %s (ledger.status_values.%s)", ErrNoWord, from, from)
	}
	w, ok := t.words[to]
	if !ok {
		return "", "", fmt.Errorf("%w: %s (ledger.status_values.%s)", ErrNoWord, to, to)
	}
	return f, w, nil
}

// word is status s as a SQL literal: the table's word, or NULL for a
// status the table does not have (it then matches no row).
func (t *Table) word(s Status) string {
	w, ok := t.words[s]
	if !ok {
		return "NULL::text"
	}
	return "'" + w + "'"
}

// column is sweeper's column key of the row alias (or of the table, when
// alias is empty) as SQL: the table's column, or what stands for it when
// the table has none ([Absence]).
func (t *Table) column(alias, key string) string {
	prefix := ""
	if alias != "" {
		prefix = alias + "."
	}
	if col, ok := t.columns[key]; !ok {
		panic("ledger: no column " + key)
	} else if col != "" {
		return prefix + col
	}
	switch key {
	case "workflow":
		return "'" + strings.ReplaceAll(t.short, "'", "''") + "'::text"
	case "action":
		return "'send'::text"
	case "source_id", "recipient":
		return "NULL::text"
	case "payload":
		return "NULL::jsonb"
	case "attempts":
		return "1"
	case "last_attempt_at":
		return "NULL::timestamptz"
	case "created_at":
		return t.column(alias, "first_attempt_at")
	case "updated_at":
		return "coalesce(" + t.column(alias, "last_attempt_at") + ", " + t.column(alias, "first_attempt_at") + ")"
	}
	panic("ledger: column " + key + " may not be absent")
}

// projection is the columns an [Operation] is read from, of row alias, in
// [ColumnNames] order: on an adopted table each column cast to sweeper's
// type (what stands for an absent one is typed already), so that one scan
// reads either table.
func (t *Table) projection(alias string) string {
	cols := make([]string, len(ColumnNames))
	for i, key := range ColumnNames {
		c := t.column(alias, key)
		if !t.Native() && t.columns[key] != "" {
			c += "::" + columnTypes[key]
		}
		cols[i] = c
	}
	return strings.Join(cols, ", ")
}

// columnTypes are the types an adopted table's columns are read as:
// sweeper's, as ledger.operations has them, but for two casts that could
// fail on one row and so fail the whole read — attempts is read as bigint
// (an int8 column's value need not fit integer) and payload as text (a
// json column may hold \u0000, which jsonb refuses); [Table.operationOf]
// judges both.
var columnTypes = map[string]string{
	"id": "bigint", "op_key": "text", "workflow": "text", "provider": "text", "action": "text",
	"source_id": "text", "recipient": "text", "payload_hash": "text", "payload": "text", "status": "text",
	"attempts": "bigint", "first_attempt_at": "timestamptz", "last_attempt_at": "timestamptz",
	"provider_record_id": "text", "created_at": "timestamptz", "updated_at": "timestamptz",
}

// placeholder is what a statement of the package writes in place of a
// name the mapping decides:
//
//	{T}            the table
//	{c:key}        column key of the table; {c:o.key} of row alias o
//	{w:status}     the table's word for status, as a literal
//	{ops}          an Operation's columns; {ops:o} of row alias o
//	{touch}        ", updated_at = now()" where sweeper must set it itself
var placeholder = regexp.MustCompile(`\{(T|touch|ops(?::[a-z]+)?|c:(?:[a-z]+\.)?[a-z_]+|w:[a-z]+)\}`)

// SQL renders src, a statement written with placeholders for the names
// a mapping decides, for t: {T} the table, {c:key} (or {c:alias.key}) a
// column, {w:status} a status word, {ops} (or {ops:alias}) an Operation's
// columns in the order [Store] scans them. It is how a program acting as
// the workflows — the demo, the benchmark, a test — writes either table:
// the mapping is applied here, in one place. An unknown placeholder
// panics.
func (t *Table) SQL(src string) string { return t.sqlFor(src) }

// sqlFor renders one statement for t. An unknown placeholder is a bug of
// the package: it panics, at start, when the table is made.
func (t *Table) sqlFor(src string) string {
	return placeholder.ReplaceAllStringFunc(src, func(p string) string {
		p = p[1 : len(p)-1]
		switch {
		case p == "T":
			return t.name
		case p == "touch":
			// ledger.operations' trigger sets updated_at; an adopted
			// table's column is set by the statement.
			if col := t.columns["updated_at"]; col != "" && !t.Native() {
				return ", " + col + " = now()"
			}
			return ""
		case p == "ops":
			return t.projection("")
		case strings.HasPrefix(p, "ops:"):
			return t.projection(strings.TrimPrefix(p, "ops:"))
		case strings.HasPrefix(p, "c:"):
			alias, key, ok := strings.Cut(strings.TrimPrefix(p, "c:"), ".")
			if !ok {
				alias, key = "", alias
			}
			return t.column(alias, key)
		case strings.HasPrefix(p, "w:"):
			s := Status(strings.TrimPrefix(p, "w:"))
			if !s.Valid() {
				panic("ledger: no status " + s)
			}
			return t.word(s)
		}
		panic("ledger: placeholder " + p)
	})
}

// columnsOf lists the mapping's columns for a message: sweeper's name =
// the table's, absent ones last.
func (t *Table) columnsOf() string {
	var have, absent []string
	for _, key := range slices.Sorted(maps.Keys(t.columns)) {
		if col, ok := t.Column(key); ok {
			have = append(have, key+"="+col)
		} else {
			absent = append(absent, key)
		}
	}
	out := strings.Join(have, ", ")
	if len(absent) > 0 {
		out += "; absent: " + strings.Join(absent, ", ")
	}
	return out
}

// String describes t in one line: its name and, when adopted, its mapping.
func (t *Table) String() string {
	if t.Native() {
		return NativeTable
	}
	return t.mapping.Table + " (" + t.columnsOf() + ")"
}
