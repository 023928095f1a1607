package config

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Sources of a key's effective value, as check-config shows them.
const (
	SourceDefault     = "default"
	SourceFile        = "file"
	SourceEnvironment = "environment"
)

// EnvName is the environment variable that sets the key at path: SWEEPER_,
// then the path's parts upper-cased, joined and with every character
// other than a letter or a digit made "_" — http.listen is
// SWEEPER_HTTP_LISTEN, providers.sms-alerts.rate_limit is
// SWEEPER_PROVIDERS_SMS_ALERTS_RATE_LIMIT.
func EnvName(path ...string) string {
	return "SWEEPER_" + envWord.ReplaceAllString(strings.ToUpper(strings.Join(path, "_")), "_")
}

var envWord = regexp.MustCompile(`[^A-Z0-9]`)

// envKey is one key the environment may set: its path and its Go type.
type envKey struct {
	path []string
	typ  reflect.Type
}

// envKeys lists every key the environment may set: each key of the
// configuration's sections, and each key of the provider blocks the file
// names (the common ones and their kind's). The database URL is not among
// them: SWEEPER_DATABASE_URL has rules of its own (a password allowed, a
// _FILE variant), see [databaseURL].
func envKeys(tree map[string]any, kinds []Kind) []envKey {
	var keys []envKey
	leaves(reflect.TypeFor[Config](), nil, &keys)
	blocks, _ := tree["providers"].(map[string]any)
	for _, name := range sortedKeys(blocks) {
		block, _ := blocks[name].(map[string]any)
		leaves(reflect.TypeFor[Provider](), []string{"providers", name}, &keys)
		kind, _ := block["kind"].(string)
		if i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == kind }); i >= 0 {
			if s := kinds[i].NewSettings(); s != nil {
				leaves(reflect.TypeOf(s), []string{"providers", name}, &keys)
			}
		}
	}
	return slices.DeleteFunc(keys, func(k envKey) bool { return slices.Equal(k.path, []string{"database", "url"}) })
}

// leaves adds the keys of struct type t, under prefix, to keys: a field
// that is a struct of keys of its own (a section) is walked; anything else
// — a value, a duration, a list, a table of names — is one key.
func leaves(t reflect.Type, prefix []string, keys *[]envKey) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		path := append(slices.Clone(prefix), name)
		ft := f.Type
		if ft.Kind() == reflect.Struct && !isText(ft) {
			leaves(ft, path, keys)
			continue
		}
		*keys = append(*keys, envKey{path: path, typ: ft})
	}
}

// isText reports whether values of t are written as text (a duration).
func isText(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// applyEnvironment sets onto tree, the file's TOML as decoded, every key
// whose variable getenv holds a value for, converted by the key's type: a
// string or a duration as written, a number or a boolean parsed, a list or
// a table as a TOML value ([{owner = "U1", …}]). It returns the paths it
// set (joined with ".") by variable, and a problem for each value that
// does not convert, naming the variable and the key.
func applyEnvironment(tree map[string]any, kinds []Kind, getenv Getenv) (set map[string]string, problems []error) {
	if getenv == nil {
		return nil, nil
	}
	set = map[string]string{}
	byName := map[string][]envKey{}
	for _, k := range envKeys(tree, kinds) {
		byName[EnvName(k.path...)] = append(byName[EnvName(k.path...)], k)
	}
	for _, name := range sortedKeys(byName) {
		value := getenv(name)
		if value == "" {
			continue
		}
		keys := byName[name]
		if len(keys) > 1 {
			paths := make([]string, len(keys))
			for i, k := range keys {
				paths[i] = strings.Join(k.path, ".")
			}
			problems = append(problems, fmt.Errorf("%s: names %s alike; set the key in the file", name, strings.Join(paths, " and ")))
			continue
		}
		key := strings.Join(keys[0].path, ".")
		v, err := envValue(value, keys[0].typ)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s (environment, for %s): %w", key, name, err))
			continue
		}
		table := tree
		for _, part := range keys[0].path[:len(keys[0].path)-1] {
			next, ok := table[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				table[part] = next
			}
			table = next
		}
		table[keys[0].path[len(keys[0].path)-1]] = v
		set[key] = name
	}
	return set, problems
}

// envValue converts a variable's value for a key of type t.
func envValue(value string, t reflect.Type) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isText(t) {
		return value, nil
	}
	switch t.Kind() {
	case reflect.String:
		return value, nil
	case reflect.Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", value)
		}
		return b, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", value)
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", value)
		}
		return f, nil
	}
	var doc map[string]any
	if _, err := toml.Decode("v = "+value, &doc); err != nil {
		return nil, fmt.Errorf("not a TOML value (a list [..] or a table {..}): %v", err)
	}
	return doc["v"], nil
}

// fileKeys lists the paths of every value the file sets (joined with
// "."), tables walked; a table that is one key (owners, channels: a Go
// map in the configuration) is listed whole.
func fileKeys(tree map[string]any, prefix string, whole map[string]bool, out map[string]bool) {
	for k, v := range tree {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && !whole[path] {
			fileKeys(sub, path, whole, out)
			continue
		}
		out[path] = true
	}
}

// tableKeys is the set of the configuration's keys that are tables of
// names (a Go map) rather than sections.
func tableKeys() map[string]bool {
	var keys []envKey
	leaves(reflect.TypeFor[Config](), nil, &keys)
	out := map[string]bool{}
	for _, k := range keys {
		if k.typ.Kind() == reflect.Map {
			out[strings.Join(k.path, ".")] = true
		}
	}
	return out
}

// sourcesOf is where each key's value came from: the environment's
// variables by path, then the file's keys.
func sourcesOf(tree map[string]any, fromEnv map[string]string, getenv Getenv) map[string]string {
	inFile := map[string]bool{}
	fileKeys(tree, "", tableKeys(), inFile)
	out := map[string]string{}
	for path := range inFile {
		out[path] = SourceFile
	}
	for path, name := range fromEnv {
		out[path] = SourceEnvironment + " " + name
	}
	if getenv != nil && (getenv(EnvDatabaseURL) != "" || getenv(EnvDatabaseURL+"_FILE") != "") {
		out["database.url"] = SourceEnvironment + " " + EnvDatabaseURL
	}
	return out
}

// Source says where the value of the key at path (dotted, as
// "http.listen") came from: "file", "environment SWEEPER_HTTP_LISTEN", or
// "default".
func (c *Config) Source(path string) string {
	if s, ok := c.sources[path]; ok {
		return s
	}
	for prefix := path; strings.Contains(prefix, "."); {
		prefix = prefix[:strings.LastIndex(prefix, ".")]
		if s, ok := c.sources[prefix]; ok {
			return s // a key inside a table or a list the file or the environment set whole
		}
	}
	return SourceDefault
}

// Keys lists the path of every key of c, in the order the sections and
// their fields are declared: each section's keys, then each provider
// block's (common, then its kind's).
func (c *Config) Keys() []string {
	var keys []envKey
	leaves(reflect.TypeFor[Config](), nil, &keys)
	for _, name := range sortedKeys(c.Providers) {
		leaves(reflect.TypeFor[Provider](), []string{"providers", name}, &keys)
		if s := c.Providers[name].Settings; s != nil {
			leaves(reflect.TypeOf(s), []string{"providers", name}, &keys)
		}
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.Join(k.path, ".")
	}
	return out
}

// otherEnv are the SWEEPER_ variables that are not configuration keys:
// the configuration's path, the database URL, the credentials sweeper
// reads by fixed name (each with its _FILE form), the variable
// deploy/compose.yaml reads on the host, and the test kit's.
var otherEnv = []string{
	EnvConfig, "SWEEPER_CONFIG_FILE",
	EnvDatabaseURL, EnvDatabaseURL + "_FILE",
	EnvRiverUIUser, EnvRiverUIUser + "_FILE",
	EnvRiverUIPass, EnvRiverUIPass + "_FILE",
	EnvWebCookieKey, EnvWebCookieKey + "_FILE",
	"SWEEPER_TEST_DATABASE_URL", "SWEEPER_PG_BINDIR", "SWEEPER_CHAOS_LOG_DIR",
}

// unknownEnv is a problem for each variable of environ ("NAME=value", as
// os.Environ gives them) that starts with SWEEPER_, has a value, and is
// neither a key's variable (the same list [applyEnvironment] reads, so a
// new key needs nothing here), nor one of [otherEnv], nor a variable an
// *_env key of the configuration names (or its _FILE form). Each names
// the variable and suggests the closest known one. A provider block's
// variable must name a block the file has and a key of its kind.
func unknownEnv(environ []string, tree map[string]any, kinds []Kind) []error {
	known := map[string]string{} // variable → what it sets
	for _, k := range envKeys(tree, kinds) {
		known[EnvName(k.path...)] = strings.Join(k.path, ".")
	}
	for _, name := range otherEnv {
		known[name] = ""
	}
	named := map[string]bool{}
	secretNames(tree, named)
	var problems []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "SWEEPER_") || value == "" {
			continue
		}
		if _, ok := known[name]; ok || named[name] || named[strings.TrimSuffix(name, "_FILE")] {
			continue
		}
		msg := fmt.Sprintf("%s: environment variable names no configuration key", name)
		if strings.HasPrefix(name, "SWEEPER_PROVIDERS_") {
			msg += " (a provider block's is SWEEPER_PROVIDERS_<NAME>_<KEY>, for a block the file has and a key of its kind)"
		}
		if best, key := closestEnv(name, known); best != "" {
			msg += "; did you mean " + best
			if key != "" {
				msg += " (" + key + ")"
			}
			msg += "?"
		}
		problems = append(problems, errors.New(msg))
	}
	slices.SortFunc(problems, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return problems
}

// secretNames adds to out every variable an *_env key of tree names.
func secretNames(tree map[string]any, out map[string]bool) {
	for k, v := range tree {
		switch v := v.(type) {
		case map[string]any:
			secretNames(v, out)
		case []map[string]any:
			for _, t := range v {
				secretNames(t, out)
			}
		case []any:
			for _, e := range v {
				if t, ok := e.(map[string]any); ok {
					secretNames(t, out)
				}
			}
		case string:
			if strings.HasSuffix(k, "_env") && v != "" {
				out[v] = true
			}
		}
	}
}

// closestEnv is the known variable nearest to name by edit distance, and
// the key it sets; none when the nearest is further than a third of the
// name's length after SWEEPER_ (then it is no typo of it).
func closestEnv(name string, known map[string]string) (string, string) {
	best, bestD := "", len(strings.TrimPrefix(name, "SWEEPER_"))/3+1
	for _, cand := range sortedKeys(known) {
		if d := editDistance(name, cand); d < bestD {
			best, bestD = cand, d
		}
	}
	return best, known[best]
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
