package app_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/proof"
)

// TestDecisionLineJSON: a dry run's decision prints every field of
// proof.Decision, under a snake_case key, with <, > and & as written. A
// field added to proof.Decision fails here until the JSON shows it.
func TestDecisionLineJSON(t *testing.T) {
	t.Parallel()
	var d proof.Decision
	v := reflect.ValueOf(&d).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("<x> & y")
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"<a>"}))
		default:
			t.Fatalf("proof.Decision.%s: a %s; teach this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	// As the CLI prints it: an encoder that leaves <, > and & alone.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(app.DecisionLine{OpKey: "op-1", Provider: "sim", Decision: d}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	var got struct {
		OpKey    string         `json:"op_key"`
		Provider string         `json:"provider"`
		Decision map[string]any `json:"decision"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.OpKey != "op-1" || got.Provider != "sim" || len(got.Decision) != v.NumField() {
		t.Errorf("JSON %s: want op_key, provider and %d decision fields", b, v.NumField())
	}
	for _, key := range []string{"done", "provider_record_id", "reason", "detail", "record_ids", "differing_fields", "candidates"} {
		if _, ok := got.Decision[key]; !ok {
			t.Errorf("decision lacks %q: %s", key, b)
		}
	}
	if strings.Contains(string(b), `\u003c`) {
		t.Errorf("HTML-escaped: %s", b)
	}
}
