package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Inspection is what the catalog says of a table a [Mapping] adopts: does
// it exist, does it have the mapped columns with types sweeper can read,
// the keys and indexes sweeper's statements need, status words the
// mapping does not name, and whether sweeper's guards are installed. It
// changes nothing: a person reads it before sweeper runs on the table.
type Inspection struct {
	// Table is the table as the mapping names it, schema.table.
	Table string `json:"table"`
	// Exists: the name is a table (or a partitioned table).
	Exists bool `json:"exists"`
	// Kind is what the name is: "table", "partitioned table", "view",
	// "materialized view", "foreign table", … or "" when nothing.
	Kind string `json:"kind"`
	// Columns are sweeper's columns the table has, each checked, in
	// [ColumnNames] order.
	Columns []ColumnCheck `json:"columns"`
	// Absent are sweeper's columns the mapping says the table lacks, with
	// what each costs ([Absence]).
	Absent []AbsentColumn `json:"absent,omitempty"`
	// Keys are the unique indexes sweeper depends on: id, op_key, and one
	// record per (provider_record_id, provider).
	Keys []KeyCheck `json:"keys"`
	// Indexes are the indexes sweeper's reads need, each served by an
	// existing index or to be created.
	Indexes []IndexCheck `json:"indexes"`
	// UnnamedWords are values of the status column the mapping names as
	// no status: sweeper leaves such rows alone. Nil when the column could
	// not be read.
	UnnamedWords []string `json:"unnamed_words"`
	// WordsFrom says how UnnamedWords were read: "data" (SELECT DISTINCT
	// under a statement_timeout), "statistics" (pg_stats' most common
	// values, when the scan took too long: rare words may be missing) or
	// "enum" (the labels of the column's enum type).
	WordsFrom string `json:"words_from,omitempty"`
	// Guards are the triggers [InstallGuards] creates, and which are
	// there calling the functions made for this mapping.
	Guards []GuardCheck `json:"guards"`
	// Usable: sweeper can run on the table as mapped. Refusals say why not.
	Usable   bool     `json:"usable"`
	Refusals []string `json:"refusals,omitempty"`
	// Warnings are what works but costs: a missing index, a status word
	// left alone, no unique record index.
	Warnings []string `json:"warnings,omitempty"`
}

// ColumnCheck is one of sweeper's columns as the table has it.
type ColumnCheck struct {
	// Key is sweeper's name; Column the table's.
	Key    string `json:"key"`
	Column string `json:"column"`
	// Required: sweeper cannot run without it ([RequiredColumns]).
	Required bool `json:"required"`
	// Found: the table has a column of that name.
	Found bool `json:"found"`
	// Type is the column's type as PostgreSQL writes it ("" if not found).
	Type string `json:"type,omitempty"`
	// TypeOK: sweeper reads and writes the type as it means to.
	TypeOK bool `json:"type_ok"`
	// Nullable: the column allows NULL. Of the required columns only
	// provider_record_id may ([NotNullColumns]).
	Nullable bool `json:"nullable"`
	// Problem says what is wrong, when something is.
	Problem string `json:"problem,omitempty"`
}

// AbsentColumn is a column of sweeper's the table does not have.
type AbsentColumn struct {
	Key  string `json:"key"`
	Cost string `json:"cost"`
}

// KeyCheck is a unique index sweeper depends on.
type KeyCheck struct {
	// Purpose names it: "id", "op_key", "one record per (provider_record_id, provider)".
	Purpose string `json:"purpose"`
	// Required: without it the table is refused.
	Required bool `json:"required"`
	// By is the index or constraint that holds it, "" for none.
	By string `json:"by,omitempty"`
	// Create is the statement that adds it, when none holds it.
	Create string `json:"create,omitempty"`
}

// IndexCheck is an index one of sweeper's reads needs.
type IndexCheck struct {
	// Purpose names the read: "stale scan", "record holders", "look-alikes",
	// "review queue", "settled count".
	Purpose string `json:"purpose"`
	// Want describes the index: its columns and predicate.
	Want string `json:"want"`
	// By are the existing indexes the planner reads the table through for
	// it; empty when none serves it.
	By []string `json:"by,omitempty"`
	// Create is the statement that adds it, when none serves it. sweeper
	// never runs it.
	Create string `json:"create,omitempty"`
	// Problem says why the read could not be planned (a column of the
	// wrong type).
	Problem string `json:"problem,omitempty"`
}

// GuardCheck is one of sweeper's guard triggers on the table.
type GuardCheck struct {
	Trigger   string `json:"trigger"`
	Installed bool   `json:"installed"`
}

// Served reports whether an existing index serves the read.
func (c IndexCheck) Served() bool { return len(c.By) > 0 }

// GuardsInstalled reports whether every guard is on the table.
func (in Inspection) GuardsInstalled() bool {
	for _, g := range in.Guards {
		if !g.Installed {
			return false
		}
	}
	return len(in.Guards) > 0
}

// relkinds names pg_class.relkind.
var relkinds = map[string]string{
	"r": "table", "p": "partitioned table", "v": "view", "m": "materialized view",
	"f": "foreign table", "S": "sequence", "i": "index", "I": "partitioned index", "c": "composite type",
}

// wordsTimeout bounds the scan for status words the mapping does not
// name, and how long planning a read waits for a lock on the table.
var wordsTimeout = "5s"

// catalogColumn is a column as pg_attribute has it.
type catalogColumn struct {
	num      int16
	typ      string // format_type
	base     string // the base type's name (a domain's base)
	typtype  string // "e" for an enum
	enumVals []string
	notNull  bool // the column, or its domain, refuses NULL
}

// Inspect reads the catalog (and, for status words, the data) of t's table
// and judges whether sweeper can run on it. It writes nothing: its probes
// run in a transaction it rolls back. db must not be inside a transaction
// that matters to the caller (Inspect's statements may fail and are
// rolled back). On [NativeTable] there is nothing to inspect: the
// migrations made it.
func Inspect(ctx context.Context, db DB, t *Table) (Inspection, error) {
	return inspect(ctx, db, t, true)
}

// CheckUsable is the part of [Inspect] that can refuse a table, and costs
// a few catalog reads whatever the table's size: that it exists and is a
// table, its columns and their types, its unique keys. Every command that
// runs on an adopted table calls it first; `sweeper adopt` gives the whole
// report (indexes, status words found in the rows, guards).
func CheckUsable(ctx context.Context, db DB, t *Table) (Inspection, error) {
	return inspect(ctx, db, t, false)
}

func inspect(ctx context.Context, db DB, t *Table, full bool) (Inspection, error) {
	in := Inspection{Table: t.Schema() + "." + t.Relation()}
	if t.Native() {
		return in, errors.New("ledger.operations is sweeper's own table, made by its migrations: there is nothing to inspect")
	}
	var oid *uint32
	var kind *string
	if err := db.QueryRow(ctx, `SELECT c.oid, c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)`, t.Name()).Scan(&oid, &kind); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return in, fmt.Errorf("look up %s: %w", in.Table, err)
	}
	if oid == nil {
		in.Refusals = append(in.Refusals, fmt.Sprintf("table %s does not exist (ledger.table; names are case-sensitive as written)", in.Table))
		in.finish()
		return in, nil
	}
	in.Kind = relkinds[*kind]
	if in.Kind == "" {
		in.Kind = "relkind " + *kind
	}
	in.Exists = *kind == "r" || *kind == "p"
	if !in.Exists {
		in.Refusals = append(in.Refusals, fmt.Sprintf("%s is a %s, not a table: sweeper writes its rows and needs its unique indexes and triggers", in.Table, in.Kind))
		in.finish()
		return in, nil
	}

	cols, err := catalogColumns(ctx, db, *oid)
	if err != nil {
		return in, fmt.Errorf("columns of %s: %w", in.Table, err)
	}
	in.checkColumns(t, cols, full)
	if err := in.checkKeys(ctx, db, t, *oid, cols); err != nil {
		return in, err
	}
	if !full {
		in.finish()
		return in, nil
	}
	if err := in.checkGuards(ctx, db, t, *oid); err != nil {
		return in, err
	}
	missing := slices.ContainsFunc(in.Columns, func(c ColumnCheck) bool { return !c.Found })
	if !missing {
		// The probes read every column sweeper reads.
		if err := in.checkIndexes(ctx, db, t); err != nil {
			return in, err
		}
	}
	if c, ok := cols[t.mustColumn("status")]; ok && isStatus.ok(c) {
		if err := in.checkWords(ctx, db, t, cols); err != nil {
			return in, err
		}
	}
	in.finish()
	return in, nil
}

// finish gives the verdict.
func (in *Inspection) finish() {
	in.Usable = len(in.Refusals) == 0
}

// catalogColumns reads the table's live columns by name.
func catalogColumns(ctx context.Context, db DB, oid uint32) (map[string]catalogColumn, error) {
	rows, err := db.Query(ctx, `
		SELECT a.attname::text, a.attnum, format_type(a.atttypid, a.atttypmod), b.typname::text, b.typtype::text,
		       coalesce((SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = b.oid), '{}'),
		       a.attnotnull OR t.typnotnull
		FROM pg_attribute a
		JOIN pg_type t ON t.oid = a.atttypid
		JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`, oid)
	if err != nil {
		return nil, err
	}
	out := map[string]catalogColumn{}
	var name string
	var c catalogColumn
	_, err = pgx.ForEachRow(rows, []any{&name, &c.num, &c.typ, &c.base, &c.typtype, &c.enumVals, &c.notNull}, func() error {
		out[name] = c
		return nil
	})
	return out, err
}

// typeRule is what sweeper accepts for one of its columns.
type typeRule struct {
	want string // for messages
	ok   func(c catalogColumn) bool
}

var (
	integerTypes = []string{"int2", "int4", "int8"}
	textTypes    = []string{"text", "varchar", "bpchar", "citext"}
	isInteger    = typeRule{"smallint, integer or bigint", func(c catalogColumn) bool { return slices.Contains(integerTypes, c.base) }}
	isText       = typeRule{"text, varchar, char or citext", func(c catalogColumn) bool { return slices.Contains(textTypes, c.base) }}
	isStatus     = typeRule{"text, varchar, char, citext or an enum", func(c catalogColumn) bool { return isText.ok(c) || c.typtype == "e" }}
	isTime       = typeRule{"timestamptz", func(c catalogColumn) bool { return c.base == "timestamptz" }}
	isJSON       = typeRule{"json or jsonb", func(c catalogColumn) bool { return c.base == "json" || c.base == "jsonb" }}
)

// typeRules are the types sweeper accepts, per column.
var typeRules = map[string]typeRule{
	"id": isInteger, "attempts": isInteger, "status": isStatus, "payload": isJSON,
	"first_attempt_at": isTime, "last_attempt_at": isTime, "created_at": isTime, "updated_at": isTime,
	"op_key": isText, "workflow": isText, "provider": isText, "action": isText, "source_id": isText,
	"recipient": isText, "payload_hash": isText, "provider_record_id": isText,
}

// checkColumns checks each mapped column's presence and type. A required
// column that allows NULL is a refusal for `sweeper adopt` (full) and a
// warning when a command starts: each row holding a NULL is read as that
// row's invalid_operation ticket, so the table stays usable, and a daemon
// already running on it is not stopped by an upgrade.
func (in *Inspection) checkColumns(t *Table, cols map[string]catalogColumn, full bool) {
	for _, key := range ColumnNames {
		name, has := t.Column(key)
		if !has {
			in.Absent = append(in.Absent, AbsentColumn{Key: key, Cost: Absence[key]})
			continue
		}
		check := ColumnCheck{Key: key, Column: name, Required: slices.Contains(RequiredColumns, key)}
		c, found := cols[name]
		rule := typeRules[key]
		switch {
		case !found:
			check.Problem = fmt.Sprintf("no column %q", name)
			if !check.Required {
				check.Problem += fmt.Sprintf(`; if the table has none, say so: ledger.columns.%s = "" (then %s is read as %s)`, key, key, Absence[key])
			}
			in.Refusals = append(in.Refusals, fmt.Sprintf("column %s (ledger.columns.%s): %s", name, key, check.Problem))
		case !rule.ok(c):
			check.Found, check.Type = true, c.typ
			check.Problem = fmt.Sprintf("type %s; sweeper needs %s", c.typ, rule.want)
			switch {
			case c.base == "timestamp":
				check.Problem += "; timestamp without time zone holds no instant: PostgreSQL reads it in each session's TimeZone, " +
					"so sweeper's stale cutoff and look-alike windows would shift by the zone's offset (and jump at daylight saving changes); " +
					fmt.Sprintf("convert it: ALTER TABLE %s ALTER COLUMN %s TYPE timestamptz USING %s AT TIME ZONE '<the zone the workflows write in>'",
						t.Name(), quoteIdent(name), quoteIdent(name))
			case key == "id":
				check.Problem += "; sweeper's tickets and lookups name an operation by an integer id"
			}
			in.Refusals = append(in.Refusals, fmt.Sprintf("column %s (ledger.columns.%s): %s", name, key, check.Problem))
		default:
			check.Found, check.Type, check.TypeOK, check.Nullable = true, c.typ, true, !c.notNull
			if check.Nullable && slices.Contains(NotNullColumns, key) {
				check.Problem = fmt.Sprintf("allows NULL; a row without %s cannot be looked up or settled, and becomes an invalid_operation ticket: "+
					"make it NOT NULL (first give a value to the rows that have none): ALTER TABLE %s ALTER COLUMN %s SET NOT NULL;",
					key, t.Name(), quoteIdent(name))
				msg := fmt.Sprintf("column %s (ledger.columns.%s): %s", name, key, check.Problem)
				if full {
					in.Refusals = append(in.Refusals, msg)
				} else {
					in.Warnings = append(in.Warnings, msg)
				}
			}
			if key == "status" && c.typtype == "e" {
				for _, w := range t.Words() {
					if !slices.Contains(c.enumVals, w) {
						check.TypeOK = false
						check.Problem = fmt.Sprintf("the enum %s has no label %q (ledger.status_values)", c.typ, w)
						in.Refusals = append(in.Refusals, fmt.Sprintf("column %s (ledger.columns.status): %s", name, check.Problem))
					}
				}
				if _, ok := t.Word(StatusFailed); !ok && check.TypeOK {
					check.TypeOK = false
					check.Problem = "an enum status needs a failed word: sweeper compares the column with its failed word, and an enum cannot be compared with a missing one"
					in.Refusals = append(in.Refusals, fmt.Sprintf("column %s (ledger.columns.status): %s", name, check.Problem))
				}
			}
		}
		in.Columns = append(in.Columns, check)
	}
}

// checkKeys finds the unique indexes on id, op_key and (provider_record_id,
// provider).
func (in *Inspection) checkKeys(ctx context.Context, db DB, t *Table, oid uint32, cols map[string]catalogColumn) error {
	num := func(key string) (int16, bool) {
		name, has := t.Column(key)
		if !has {
			return 0, false
		}
		c, ok := cols[name]
		return c.num, ok
	}
	// Unique, valid, immediate (ON CONFLICT takes no deferrable arbiter),
	// on exactly these key columns; partial only with the predicate given.
	find := func(attnums []int16, predicate string) (string, error) {
		var name string
		err := db.QueryRow(ctx, `
			SELECT coalesce(c.conname::text, i.indexrelid::regclass::text)
			FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
			WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid AND i.indimmediate AND i.indexprs IS NULL
			  AND i.indnkeyatts = cardinality($2::int2[])
			  AND (i.indkey::int2[])[0:i.indnkeyatts - 1] @> $2::int2[]
			  AND (i.indpred IS NULL OR ($3 <> '' AND pg_get_expr(i.indpred, i.indrelid) = format('(%I IS NOT NULL)', $3::text)))
			ORDER BY i.indisprimary DESC, 1 LIMIT 1`, oid, attnums, predicate).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil
		}
		return name, err
	}
	rel := t.Relation()
	for _, k := range []struct {
		purpose  string
		keys     []string
		required bool
		why      string
	}{
		{"id", []string{"id"}, true, "an operation is read and written by its id"},
		{"op_key", []string{"op_key"}, true, "Claim's INSERT … ON CONFLICT (op_key) needs it as its arbiter, and one op_key must name one operation"},
		{"one record per (provider_record_id, provider)", []string{"provider_record_id", "provider"}, false, ""},
	} {
		var nums []int16
		for _, key := range k.keys {
			n, ok := num(key)
			if !ok {
				return nil // refused already: the column is missing
			}
			nums = append(nums, n)
		}
		predicate := "" // the column a partial index may exclude the NULLs of
		if len(k.keys) > 1 {
			predicate = t.mustColumn("provider_record_id")
		}
		by, err := find(nums, predicate)
		if err != nil {
			return fmt.Errorf("unique indexes of %s: %w", in.Table, err)
		}
		check := KeyCheck{Purpose: k.purpose, Required: k.required, By: by}
		if by == "" {
			cols := make([]string, len(k.keys))
			for i, key := range k.keys {
				cols[i] = t.columns[key]
			}
			where := ""
			if predicate != "" {
				where = " WHERE " + quoteIdent(predicate) + " IS NOT NULL"
			}
			check.Create = fmt.Sprintf("CREATE UNIQUE INDEX CONCURRENTLY %s ON %s (%s)%s;",
				indexName(rel, k.keys[0]+"_key"), t.Name(), strings.Join(cols, ", "), where)
			if k.required {
				in.Refusals = append(in.Refusals, fmt.Sprintf("column %s (ledger.columns.%s) has no unique index or constraint of its own (not partial, not deferrable): %s; add one: %s",
					t.mustColumn(k.keys[0]), k.keys[0], k.why, check.Create))
			} else {
				in.Warnings = append(in.Warnings, "no unique index holds one record per (provider_record_id, provider): "+
					"only sweeper's guards (sweeper adopt --apply --guards) keep a workflow from confirming two operations with one record (or create the unique index given for it)")
			}
		}
		in.Keys = append(in.Keys, check)
	}
	return nil
}

// mustColumn is the table's column for key, unquoted: one of
// [RequiredColumns], which every mapping has.
func (t *Table) mustColumn(key string) string {
	name, _ := t.Column(key)
	return name
}

// quoteIdent quotes a name for SQL.
func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// indexName is a name for an index sweeper proposes on table rel: at
// most PostgreSQL's 63 bytes, quoted.
func indexName(rel, purpose string) string {
	suffix := "_sweeper_" + purpose
	base := rel
	for len(base)+len(suffix) > 63 {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	return quoteIdent(base + suffix)
}

// probe is one of sweeper's reads as [Inspection.checkIndexes] plans it:
// a statement of the shape sweeper runs, with literal values.
type probe struct {
	purpose, name string
	// keys are sweeper's columns of the index that serves it, in order;
	// where its predicate.
	keys  []string
	where string
	// query reads the table as sweeper does.
	query string
}

func (t *Table) probes() []probe {
	return []probe{
		{"stale scan", "stale", []string{"provider", "first_attempt_at", "id"}, "{c:status} = {w:pending}",
			`SELECT {c:id} FROM {T} WHERE {c:status} = {w:pending} AND {c:provider} = 'sweeper-probe'
			   AND {c:first_attempt_at} < now() AND ({c:first_attempt_at}, {c:id}) > ('-infinity', 0)
			 ORDER BY {c:first_attempt_at}, {c:id} LIMIT 100`},
		{"record holders", "record", []string{"provider_record_id", "provider"}, "{c:provider_record_id} IS NOT NULL",
			`SELECT {c:id} FROM {T} WHERE {c:provider_record_id} = 'sweeper-probe' AND {c:provider} = ANY('{sweeper-probe}'::text[])`},
		{"look-alikes", "lookalike", []string{"payload_hash", "provider"}, "{c:status} IN ({w:pending}, {w:review})",
			`SELECT {c:id} FROM {T} WHERE {c:payload_hash} = 'sweeper-probe' AND {c:provider} = ANY('{sweeper-probe}'::text[])
			   AND {c:status} IN ({w:pending}, {w:review})`},
		{"review queue", "review", []string{"provider"}, "{c:status} = {w:review}",
			`SELECT {c:provider}, count(*) FROM {T} WHERE {c:status} = {w:review} GROUP BY 1`},
		{"settled count", "settled", []string{"provider", "updated_at"}, t.settledWhere(),
			`SELECT count(*) FROM {T} WHERE {c:provider} = 'sweeper-probe' AND ` + t.settledWhere() + `
			   AND {c:updated_at} >= now() - interval '1 hour'`},
	}
}

// settledWhere is the settled index's predicate: done, and failed when the
// table has a word for it.
func (t *Table) settledWhere() string {
	if _, ok := t.Word(StatusFailed); ok {
		return "{c:status} IN ({w:done}, {w:failed})"
	}
	return "{c:status} = {w:done}"
}

// create is the CREATE INDEX statement for p on t.
func (t *Table) createIndex(p probe) string {
	cols := make([]string, len(p.keys))
	for i, key := range p.keys {
		c := t.sqlFor("{c:" + key + "}")
		if _, has := t.Column(key); !has {
			c = "(" + c + ")" // an expression stands in for the column
		}
		cols[i] = c
	}
	return fmt.Sprintf("CREATE INDEX CONCURRENTLY %s ON %s (%s) WHERE %s;",
		indexName(t.relname, p.name), t.name, strings.Join(cols, ", "), t.sqlFor(p.where))
}

// checkIndexes plans each of sweeper's reads with sequential scans
// disabled, in a transaction it rolls back, and takes a read as served
// when the plan reads the table through an index that narrows it: one
// with an index condition, or a partial index (the planner uses one only
// when the query implies its predicate). A full pass over an unrelated
// index, which disabling sequential scans can make the planner choose,
// does not count.
func (in *Inspection) checkIndexes(ctx context.Context, db DB, t *Table) error {
	// The table and, when partitioned, its partitions: a plan reads a
	// partitioned table through its partitions' indexes.
	rels := map[[2]string]bool{}
	partial := map[string]bool{}
	rows, err := db.Query(ctx, `SELECT n.nspname::text, r.relname::text, ic.relname::text, i.indpred IS NOT NULL
		FROM (SELECT to_regclass($1) AS relid UNION SELECT relid FROM pg_partition_tree(to_regclass($1))) p
		JOIN pg_class r ON r.oid = p.relid JOIN pg_namespace n ON n.oid = r.relnamespace
		LEFT JOIN pg_index i ON i.indrelid = r.oid AND i.indisvalid
		LEFT JOIN pg_class ic ON ic.oid = i.indexrelid`, t.Name())
	if err != nil {
		return fmt.Errorf("indexes of %s: %w", in.Table, err)
	}
	var schema, rel string
	var index *string
	var isPartial *bool
	if _, err := pgx.ForEachRow(rows, []any{&schema, &rel, &index, &isPartial}, func() error {
		rels[[2]string{schema, rel}] = true
		if index != nil {
			partial[*index] = *isPartial
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexes of %s: %w", in.Table, err)
	}
	for _, p := range t.probes() {
		check := IndexCheck{Purpose: p.purpose, Want: t.want(p)}
		plan, err := explain(ctx, db, t.sqlFor(p.query))
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code != "57014" {
			// A column of the wrong type, refused already.
			check.Problem = "cannot plan it: " + pgErr.Message
			in.Indexes = append(in.Indexes, check)
			continue
		}
		if err != nil {
			return fmt.Errorf("plan the %s read on %s: %w", p.purpose, in.Table, err)
		}
		for _, n := range plan.scans(rels) {
			if (n.cond || partial[n.index]) && !slices.Contains(check.By, n.index) {
				check.By = append(check.By, n.index)
			}
		}
		if !check.Served() {
			check.Create = t.createIndex(p)
			in.Warnings = append(in.Warnings, fmt.Sprintf("no index serves the %s read: it scans the whole table each time (create the index given for it)", p.purpose))
		}
		in.Indexes = append(in.Indexes, check)
	}
	return nil
}

// want describes the index p needs.
func (t *Table) want(p probe) string {
	cols := make([]string, len(p.keys))
	for i, key := range p.keys {
		cols[i] = t.sqlFor("{c:" + key + "}")
	}
	return "(" + strings.Join(cols, ", ") + ") WHERE " + t.sqlFor(p.where)
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	Type      string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Schema    string     `json:"Schema"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Recheck   string     `json:"Recheck Cond"`
	Plans     []planNode `json:"Plans"`
}

// indexScan is an index a plan reads, and whether it narrows the read.
type indexScan struct {
	index string
	cond  bool
}

// scans are the index scans of the plan on the relations rels (schema,
// name). A bitmap heap scan's index is its child's; its condition the
// child's.
func (n planNode) scans(rels map[[2]string]bool) []indexScan {
	var out []indexScan
	var walk func(n planNode, onTable bool)
	walk = func(n planNode, onTable bool) {
		ours := rels[[2]string{n.Schema, n.Relation}]
		switch n.Type {
		case "Index Scan", "Index Only Scan":
			if ours {
				out = append(out, indexScan{n.Index, n.IndexCond != ""})
			}
		case "Bitmap Index Scan":
			if onTable {
				out = append(out, indexScan{n.Index, n.IndexCond != ""})
			}
		}
		for _, c := range n.Plans {
			walk(c, onTable || (n.Type == "Bitmap Heap Scan" && ours))
		}
	}
	walk(n, false)
	return out
}

// explain plans query with sequential scans off, in a transaction rolled
// back.
func explain(ctx context.Context, db DB, query string) (planNode, error) {
	var plan planNode
	err := inRolledBack(ctx, db, func(tx DB) error {
		// Planning waits for no lock longer than the status scan may run.
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL lock_timeout = '`+wordsTimeout+`'`); err != nil {
			return err
		}
		var out []byte
		if err := tx.QueryRow(ctx, `EXPLAIN (VERBOSE, FORMAT JSON) `+query).Scan(&out); err != nil {
			return err
		}
		var plans []struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
			return fmt.Errorf("read the plan: %v", err)
		}
		plan = plans[0].Plan
		return nil
	})
	return plan, err
}

// beginner is a DB that starts transactions: a pool, a connection, or a
// transaction (a savepoint).
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// inRolledBack runs fn in a transaction (or a savepoint) on db and rolls
// it back: what fn sets or changes is undone.
func inRolledBack(ctx context.Context, db DB, fn func(tx DB) error) error {
	b, ok := db.(beginner)
	if !ok {
		return errors.New("inspect needs a pool, a connection or a transaction")
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only: nothing to keep
	return fn(tx)
}

// checkWords finds status words the mapping does not name.
func (in *Inspection) checkWords(ctx context.Context, db DB, t *Table, cols map[string]catalogColumn) error {
	col, _ := t.Column("status")
	named := t.Words()
	if c := cols[col]; c.typtype == "e" {
		in.WordsFrom = "enum"
		for _, w := range c.enumVals {
			if !slices.Contains(named, w) {
				in.UnnamedWords = append(in.UnnamedWords, w)
			}
		}
	} else {
		in.WordsFrom = "data"
		err := inRolledBack(ctx, db, func(tx DB) error {
			if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '`+wordsTimeout+`'`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, t.sqlFor(`SELECT DISTINCT {c:status}::text FROM {T} WHERE {c:status}::text <> ALL($1::text[]) ORDER BY 1 LIMIT 100`), named)
			if err != nil {
				return err
			}
			in.UnnamedWords, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "57014" { // query_canceled: the timeout
			in.WordsFrom = "statistics"
			rows, err := db.Query(ctx, `SELECT DISTINCT v FROM pg_stats s, unnest(s.most_common_vals::text::text[]) AS v
				WHERE s.schemaname = $1 AND s.tablename = $2 AND s.attname = $3 AND v <> ALL($4::text[]) ORDER BY 1`,
				t.schema, t.relname, col, named)
			if err != nil {
				return fmt.Errorf("status words of %s: %w", in.Table, err)
			}
			if in.UnnamedWords, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return fmt.Errorf("status words of %s: %w", in.Table, err)
			}
		} else if err != nil {
			return fmt.Errorf("status words of %s: %w", in.Table, err)
		}
	}
	if in.UnnamedWords == nil {
		in.UnnamedWords = []string{} // read, and none
	}
	if len(in.UnnamedWords) > 0 {
		in.Warnings = append(in.Warnings, fmt.Sprintf("status %s %q: the mapping names no status for them (ledger.status_values): sweeper leaves such rows alone",
			plural(len(in.UnnamedWords), "word", "words"), in.UnnamedWords))
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// checkGuards lists sweeper's triggers on the table: one is installed
// when it calls the function [InstallGuards] gives it for t's mapping
// (after a rename, the triggers call the old name's functions, which read
// the old name: installing again replaces them).
func (in *Inspection) checkGuards(ctx context.Context, db DB, t *Table, oid uint32) error {
	rows, err := db.Query(ctx, `
SELECT g.tgname::text, p.proname::text
FROM pg_trigger g JOIN pg_proc p ON p.oid = g.tgfoid JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE g.tgrelid = $1 AND NOT g.tgisinternal AND n.nspname = 'sweeper'`, oid)
	if err != nil {
		return fmt.Errorf("triggers of %s: %w", in.Table, err)
	}
	calls := map[string]string{}
	var trigger, function string
	if _, err := pgx.ForEachRow(rows, []any{&trigger, &function}, func() error {
		calls[trigger] = function
		return nil
	}); err != nil {
		return fmt.Errorf("triggers of %s: %w", in.Table, err)
	}
	want := t.guardFunctionOf()
	for _, g := range GuardTriggers {
		fn, ok := calls[g]
		in.Guards = append(in.Guards, GuardCheck{Trigger: g, Installed: ok && fn == want[g]})
	}
	return nil
}
