package providers_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sweeper/sweeper/providers"
)

// FuzzCheckJSON: CheckJSON accepts exactly the valid UTF-8, valid JSON
// values in which no object holds two keys equal under strings.EqualFold,
// checked here the slow way, pair by pair.
func FuzzCheckJSON(f *testing.F) {
	for _, seed := range []string{
		`{"matches":[{"id":"r","payload_hash":"a","payload_hash":"b"}]}`,
		`{"matches":[{"id":"r","payload_hash":"a","Payload_Hash":"b"}]}`,
		`{"matches":[],"matches":[{"id":"r"}]}`,
		`{"op_key":"a","op_` + "\u212a" + `ey":"b"}`,
		`{"s":1,"ſ":2,"ss":3,"ß":4}`,
		`{"a":{"a":{"a":[]}},"b":[{"a":1},{"a":2}]}`,
		`{} {}`,
		"{\"\xff\":1}",
		`"x"`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := providers.CheckJSON(data)
		if !utf8.Valid(data) || !json.Valid(data) {
			if err == nil {
				t.Fatalf("CheckJSON(%q) = nil for data that is not valid UTF-8 JSON", data)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		foldPair := hasFoldPair(t, dec)
		if foldPair != (err != nil) {
			t.Fatalf("CheckJSON(%q) = %v; an object with keys equal under EqualFold: %v", data, err, foldPair)
		}
	})
}

// hasFoldPair reads one value from dec and reports whether an object in it
// holds two keys equal under strings.EqualFold.
func hasFoldPair(t *testing.T, dec *json.Decoder) bool {
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	switch tok {
	case json.Delim('['):
		for dec.More() {
			found = hasFoldPair(t, dec) || found
		}
		dec.Token() //nolint:errcheck // valid JSON
	case json.Delim('{'):
		var keys []string
		for dec.More() {
			k, _ := dec.Token()
			for _, prev := range keys {
				if strings.EqualFold(prev, k.(string)) {
					found = true
				}
			}
			keys = append(keys, k.(string))
			found = hasFoldPair(t, dec) || found
		}
		dec.Token() //nolint:errcheck // valid JSON
	}
	return found
}
