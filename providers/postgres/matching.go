package postgres

import (
	"slices"
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// Matching implements providers.MatchingLookup: the query matches by key
// when it returns an op_key column — named in its select list, see
// [returnsOpKey] — and binds @op_key or @op_keys (Validate refuses a query
// that returns op_key without binding either). Each row's op_key is then
// compared with the operation's, exactly (see the package doc). Any other
// query — one that binds @op_key but returns no op_key, among them —
// matches by resemblance, whatever its WHERE clause says: its rows cannot
// show whose they are, so they are proof only inside the operation's own
// window and when no other operation could own them.
//
// It is decided from the query's text, when the adapter is made, and not
// by asking the database to describe the query: the adapter is made
// without connecting (a provider database that is down when sweeper starts
// must not keep it from starting), and every replica must decide alike.
// Each result's columns are checked against it at every lookup.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: a.byKey} }

// byKey reports whether query matches by key: it returns op_key and binds
// @op_key or @op_keys.
func byKey(query string) bool {
	params := scanSQL(query).params
	return returnsOpKey(query) && (slices.Contains(params, "op_key") || slices.Contains(params, "op_keys"))
}

// batchForm reports whether query is the batch form: it binds @op_keys.
func batchForm(query string) bool { return slices.Contains(scanSQL(query).params, "op_keys") }

// returnsOpKey reports whether the select list of query's outermost
// SELECT (after a WITH clause; the first of a UNION, which names the
// columns) has an output column op_key that is not computed from a
// parameter — see [selectOpKey].
func returnsOpKey(query string) bool { return selectOpKey(query) == opKeyStored }

// opKeyOutput is what a query's select list says of an op_key column.
type opKeyOutput int

const (
	// opKeyNone: no item whose output name can be read is op_key.
	opKeyNone opKeyOutput = iota
	// opKeyStored: an item named op_key that uses no parameter.
	opKeyStored
	// opKeyFromParameter: the item named op_key uses a parameter
	// (@op_key AS op_key): every row would carry the key asked, whatever
	// it is stored under, and comparing it would prove nothing.
	opKeyFromParameter
)

// selectOpKey reads the select list of query's outermost SELECT for an
// item named op_key: the column op_key, qualified or not (t.op_key), cast
// or not (op_key::text), or an item aliased op_key (… AS op_key, or …
// op_key), the name unquoted in any letter case or quoted exactly
// ("op_key"), as PostgreSQL names result columns. What it cannot see —
// SELECT *, a query in parentheses — is no op_key: the query then matches
// by resemblance, the stricter rule, and the package doc says to name
// op_key in the select list.
func selectOpKey(query string) opKeyOutput {
	toks := tokens(query)
	depth, start := 0, -1
	for i, t := range toks {
		switch {
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case depth == 0 && t.kind == wordToken && t.text == "select":
			start = i + 1
		}
		if start >= 0 {
			break
		}
	}
	if start < 0 {
		return opKeyNone
	}
	rest := toks[start:]
	// SELECT DISTINCT [ON (…)] or ALL: not items.
	if len(rest) > 0 && rest[0].kind == wordToken && (rest[0].text == "distinct" || rest[0].text == "all") {
		rest = rest[1:]
		if len(rest) > 0 && rest[0].kind == wordToken && rest[0].text == "on" {
			rest = skipParens(rest[1:])
		}
	}
	var items [][]token
	var item []token
	depth = 0
list:
	for _, t := range rest {
		switch {
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case depth == 0 && t.kind == wordToken && slices.Contains(selectListEnds, t.text):
			break list
		case depth == 0 && t.text == ",":
			items, item = append(items, item), nil
			continue
		}
		item = append(item, t)
	}
	items = append(items, item)
	out := opKeyNone
	for _, it := range items {
		if outputName(it) != "op_key" {
			continue
		}
		if slices.ContainsFunc(it, func(t token) bool { return t.kind == paramToken }) {
			return opKeyFromParameter
		}
		out = opKeyStored
	}
	return out
}

// selectListEnds are the keywords that end a select list.
var selectListEnds = []string{"from", "into", "where", "group", "having", "window", "union", "intersect", "except", "order", "limit", "offset", "fetch", "for"}

// notAlias are the keywords after which a final word is part of the
// expression, not its alias (x IS NULL, NOT flag, a AND b).
var notAlias = []string{"and", "or", "not", "is", "null", "true", "false", "isnull", "notnull", "distinct", "between", "like", "ilike", "similar", "in", "any", "all", "some", "case", "when", "then", "else", "array", "collate", "at", "zone", "escape", "unknown"}

// outputName is the name PostgreSQL gives the output column of a select
// list item, when the item is one whose name can be read from its text: a
// column reference or an aliased expression; "" otherwise.
func outputName(item []token) string {
	n := len(item)
	if n == 0 {
		return ""
	}
	// A column cast (op_key::text, op_key::varchar(64)) keeps the column's
	// name.
	if i := slices.IndexFunc(item, func(t token) bool { return t.text == "::" }); i > 0 && castType(item[i+1:]) {
		if name, ok := columnRef(item[:i]); ok {
			return name
		}
	}
	last := item[n-1]
	if last.kind != wordToken && last.kind != quotedToken {
		return ""
	}
	if n >= 2 && item[n-2].kind == wordToken && item[n-2].text == "as" {
		return last.text
	}
	if name, ok := columnRef(item); ok {
		return name
	}
	// An alias without AS: after an expression's end.
	prev := item[n-2]
	switch {
	case prev.text == ")" || prev.kind == literalToken || prev.kind == quotedToken:
		return last.text
	case prev.kind == wordToken && !slices.Contains(notAlias, prev.text) && !slices.Contains(notAlias, last.text):
		return last.text
	}
	return ""
}

// columnRef returns the column's name when item is a column reference,
// name(.name)*.
func columnRef(item []token) (string, bool) {
	if len(item)%2 == 0 {
		return "", false
	}
	for i, t := range item {
		if i%2 == 0 && t.kind != wordToken && t.kind != quotedToken || i%2 == 1 && t.text != "." {
			return "", false
		}
	}
	return item[len(item)-1].text, true
}

// castType reports whether toks, after a "::", are a type name and nothing
// more: a word, with its modifiers in parentheses (varchar(64)).
func castType(toks []token) bool {
	switch {
	case len(toks) == 0 || toks[0].kind != wordToken:
		return false
	case len(toks) == 1:
		return true
	}
	return toks[1].text == "(" && len(skipParens(toks[1:])) == 0 && toks[len(toks)-1].text == ")"
}

// skipParens returns toks after a parenthesized group at its start.
func skipParens(toks []token) []token {
	depth := 0
	for i, t := range toks {
		switch t.text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 {
			return toks[i+1:]
		}
	}
	return nil
}

// token is a lexical token of SQL, as far as the select list's names need.
type token struct {
	kind tokenKind
	// text: a word lower-cased, as PostgreSQL folds an unquoted name; a
	// quoted name as written, its doubled quotes undone; punctuation or an
	// operator as written; empty for a literal or a parameter.
	text string
}

type tokenKind int

const (
	symbolToken tokenKind = iota
	wordToken
	quotedToken
	literalToken // a string or a number
	paramToken   // a named (@name) or positional ($1) parameter
)

// tokens splits query into tokens, skipping comments and white space, with
// the lexical rules of [scanSQL].
func tokens(query string) []token {
	var out []token
	n := len(query)
	for i := 0; i < n; {
		c := query[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < n && query[i+1] == '-':
			end := strings.IndexAny(query[i:], "\r\n")
			if end < 0 {
				return out
			}
			i += end + 1
		case c == '/' && i+1 < n && query[i+1] == '*':
			i = skipBlockComment(query, i+2)
		case (c == 'e' || c == 'E') && i+1 < n && query[i+1] == '\'':
			i = skipQuoted(query, i+2, '\'', true)
			out = append(out, token{kind: literalToken})
		case c == '\'':
			i = skipQuoted(query, i+1, '\'', false)
			out = append(out, token{kind: literalToken})
		case c == '"':
			end := skipQuoted(query, i+1, '"', false)
			name := strings.ReplaceAll(strings.TrimSuffix(query[i+1:end], `"`), `""`, `"`)
			out = append(out, token{kind: quotedToken, text: name})
			i = end
		case c == '$':
			if after, ok := skipDollarQuoted(query, i); ok {
				i = after
				out = append(out, token{kind: literalToken})
			} else {
				i++
				for i < n && isDigit(query[i]) {
					i++
				}
				out = append(out, token{kind: paramToken})
			}
		case c == '@' && i+1 < n && (isASCIILetter(query[i+1]) || query[i+1] == '_'):
			i++
			for i < n && (isASCIILetter(query[i]) || isDigit(query[i]) || query[i] == '_') {
				i++
			}
			out = append(out, token{kind: paramToken})
		case isIdentStart(c):
			j := i + 1
			for j < n && (isIdentStart(query[j]) || isDigit(query[j]) || query[j] == '$') {
				j++
			}
			out = append(out, token{kind: wordToken, text: asciiLower(query[i:j])})
			i = j
		case isDigit(c) || c == '.' && i+1 < n && isDigit(query[i+1]):
			j := i + 1
			for j < n && (isDigit(query[j]) || isASCIILetter(query[j]) || query[j] == '.' || query[j] == '_') {
				j++
			}
			out = append(out, token{kind: literalToken})
			i = j
		case strings.ContainsRune("(),.;[]", rune(c)):
			out = append(out, token{kind: symbolToken, text: string(c)})
			i++
		default:
			// An operator: a run of operator characters (::, ->>, *).
			j := i + 1
			for j < n && strings.IndexByte("+-*/<>=~!@#%^&|`?:", query[j]) >= 0 {
				j++
			}
			out = append(out, token{kind: symbolToken, text: query[i:j]})
			i = j
		}
	}
	return out
}

// asciiLower lower-cases ASCII letters only, as PostgreSQL folds an
// unquoted name in a multi-byte encoding.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}
