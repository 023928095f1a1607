package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// ErrMalformedJSON is what [CheckJSON] and [DecodeJSON] return for a body
// that is not JSON sweeper will read as a provider's answer. For a lookup,
// such an answer is a failed lookup (transient), never records.
var ErrMalformedJSON = errors.New("malformed JSON")

// CheckJSON returns nil when data is one JSON value sweeper may read as a
// provider's answer: valid UTF-8, valid JSON (at most 10000 levels deep,
// as encoding/json allows), nothing but white space after the value, and no
// object holding two keys that are equal under [strings.EqualFold] — a
// duplicate ("id" twice, or "id" and "\u0069d"), a case variant ("id" and
// "ID") or a Unicode fold ("k" and KELVIN SIGN "K").
//
// Those are refused because encoding/json keeps the last of duplicate keys
// and gives a struct field whichever case variant comes last: a hostile or
// broken answer could carry one value for a reader that takes the first
// key and another for sweeper. Rather than pick one, the answer is refused.
//
// The error wraps [ErrMalformedJSON] and names the offending key (escaped,
// cut short) and where it is, never a value.
func CheckJSON(data []byte) error { return checkJSON(data, nil) }

// DecodeJSON decodes data into v (a non-nil pointer) after [CheckJSON], and
// case-sensitively: a key that is a struct field's JSON name only under
// [strings.EqualFold] ("ID" for id, "Payload_Hash" for payload_hash) is
// refused rather than taken as that field, as encoding/json would take it.
// Keys that are no field's name are ignored; map keys are kept as they are.
// A type with its own UnmarshalJSON reads its part of data as it likes.
// Numbers decoded into an interface value are [json.Number], as written,
// not rounded through float64.
//
// Every error wraps [ErrMalformedJSON]; none quotes a value of data.
func DecodeJSON(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: decoding needs a non-nil pointer, not %T", ErrMalformedJSON, v)
	}
	if err := checkJSON(data, rv.Type()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		// encoding/json's own messages can quote the input (a custom
		// decoder's error, a time that does not parse): only their kind is
		// kept.
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			at := ""
			if typ.Field != "" {
				at = " at " + typ.Field
			}
			return fmt.Errorf("%w: a JSON %s where %s was expected%s", ErrMalformedJSON, typ.Value, typ.Type, at)
		}
		return fmt.Errorf("%w: a value could not be read into %T", ErrMalformedJSON, v)
	}
	return nil
}

// checkJSON is CheckJSON, and with t set also refuses the keys that would
// reach a field of t only by encoding/json's case-insensitive matching.
func checkJSON(data []byte, t reflect.Type) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: not valid UTF-8", ErrMalformedJSON)
	}
	if !json.Valid(data) {
		// Unmarshal says where; its syntax errors quote one character at most.
		var raw json.RawMessage
		err := json.Unmarshal(data, &raw)
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return fmt.Errorf("%w: not valid JSON (syntax error at byte %d)", ErrMalformedJSON, syntax.Offset)
		}
		return fmt.Errorf("%w: not valid JSON", ErrMalformedJSON)
	}
	// The data is one valid value, at most 10000 levels deep: the walk
	// below recurses no deeper, and its tokens cannot fail.
	w := walker{dec: json.NewDecoder(bytes.NewReader(data))}
	return w.value(nil, t)
}

// walker reads a valid JSON value token by token, checking each object's
// keys.
type walker struct {
	dec *json.Decoder
}

// where is a position in the value, rendered only for an error.
type where struct {
	parent *where
	key    string
	index  int // -1 for a key
}

func (p *where) String() string {
	if p == nil {
		return ""
	}
	var parts []string
	for ; p != nil; p = p.parent {
		if p.index >= 0 {
			parts = append(parts, "["+strconv.Itoa(p.index)+"]")
			continue
		}
		if PlainKey(p.key) {
			parts = append(parts, "."+p.key)
		} else {
			parts = append(parts, "["+quoteKey(p.key)+"]")
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
	}
	return strings.TrimPrefix(b.String(), ".")
}

// at is " at PATH", or nothing at the top.
func at(p *where) string {
	if p == nil {
		return ""
	}
	return " at " + p.String()
}

func (w *walker) value(path *where, t reflect.Type) error {
	tok, err := w.dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedJSON, err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	t = decodedType(t)
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(&where{parent: path, index: i}, elem); err != nil {
				return err
			}
		}
	case '{':
		var fields *structFields
		var elem reflect.Type
		switch {
		case t == nil:
		case t.Kind() == reflect.Struct:
			fields = fieldsOf(t)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]string{} // folded key → key as written
		for w.dec.More() {
			tok, err := w.dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrMalformedJSON, err)
			}
			key := tok.(string)
			folded := foldKey(key)
			if prev, dup := seen[folded]; dup {
				if prev == key {
					return fmt.Errorf("%w: duplicate key %s%s", ErrMalformedJSON, quoteKey(key), at(path))
				}
				return fmt.Errorf("%w: keys %s and %s%s differ only in letter case", ErrMalformedJSON, quoteKey(prev), quoteKey(key), at(path))
			}
			seen[folded] = key
			child := elem
			if fields != nil {
				if ft, ok := fields.exact[key]; ok {
					child = ft
				} else if name, ok := fields.folded[folded]; ok {
					return fmt.Errorf("%w: key %s%s is not %s: keys are matched exactly", ErrMalformedJSON, quoteKey(key), at(path), quoteKey(name))
				}
			}
			if err := w.value(&where{parent: path, key: key, index: -1}, child); err != nil {
				return err
			}
		}
	}
	if _, err := w.dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("%w: %v", ErrMalformedJSON, err)
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodedType is the type whose keys the walk checks for a value decoded
// into t: pointers followed, nil for an interface or a type that decodes
// itself.
func decodedType(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
			return nil
		}
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
		case reflect.Interface:
			return nil
		default:
			return t
		}
	}
	return nil
}

// structFields are the JSON names of a struct's fields, as encoding/json
// reads them.
type structFields struct {
	exact  map[string]reflect.Type // name → field type
	folded map[string]string       // foldKey(name) → name
}

var fieldCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{exact: map[string]reflect.Type{}, folded: map[string]string{}}
	addFields(f, t, map[reflect.Type]bool{})
	fieldCache.Store(t, f)
	return f
}

// addFields adds t's fields to f, with the fields of untagged embedded
// structs as the outer struct's own (as encoding/json promotes them; where
// it would drop a conflicting name, the name is still one of the struct's
// for the check).
func addFields(f *structFields, t reflect.Type, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(f, ft, visiting)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, ok := f.exact[name]; !ok {
			f.exact[name] = sf.Type
		}
		if _, ok := f.folded[foldKey(name)]; !ok {
			f.folded[foldKey(name)] = name
		}
	}
}

// foldKey maps each rune of s to the smallest rune of its Unicode simple
// case-folding orbit, so that foldKey(a) == foldKey(b) exactly when
// strings.EqualFold(a, b) for valid UTF-8.
func foldKey(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || ('a' <= c && c <= 'z') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// PlainKey reports whether a key an answer holds may be named in an error
// or a path as it is: a short ASCII word (letters, digits, '_', '-'), so
// that no error quotes what an answer made up.
func PlainKey(k string) bool {
	if k == "" || len(k) > 40 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// quoteKey shows a key in an error: quoted, non-ASCII escaped, and cut
// after 40 bytes.
func quoteKey(k string) string {
	if len(k) > 40 {
		n := 40
		for n > 0 && !utf8.RuneStart(k[n]) {
			n--
		}
		return strconv.QuoteToASCII(k[:n]) + "…"
	}
	return strconv.QuoteToASCII(k)
}
