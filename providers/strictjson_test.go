package providers_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
)

const (
	wrongHash = "1111111111111111111111111111111111111111111111111111111111111111"
	rightHash = "abababababababababababababababababababababababababababababababab"
)

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		data    string
		wantErr string // "" for none; else a part of the message
	}{
		{desc: "an object", data: `{"matches":[{"id":"r","payload_hash":"` + rightHash + `"}]}`},
		{desc: "a scalar", data: `"x"`},
		{desc: "white space around the value", data: " \n\t{\"a\":1}\r\n "},
		{desc: "the same key in different objects", data: `[{"id":"a"},{"id":"b"}]`},
		{desc: "the same key at different depths", data: `{"id":"a","next":{"id":"b"}}`},
		{desc: "keys that only look alike", data: `{"ss":1,"ß":2,"id":3,"i_d":4}`},
		{desc: "an empty key", data: `{"":1}`},

		{desc: "empty", data: ``, wantErr: "not valid JSON"},
		{desc: "only white space", data: "  \n", wantErr: "not valid JSON"},
		{desc: "truncated", data: `{"matches":[`, wantErr: "not valid JSON"},
		{desc: "data after the value", data: `{"matches":[]} {"matches":[{"id":"r"}]}`, wantErr: "not valid JSON"},
		{desc: "a second value without space", data: `{}{}`, wantErr: "not valid JSON"},
		{desc: "invalid UTF-8 in a string", data: "{\"id\":\"r\xff\"}", wantErr: "not valid UTF-8"},
		{desc: "invalid UTF-8 in a key", data: "{\"\xff\xfe\":1}", wantErr: "not valid UTF-8"},
		{desc: "too deep", data: strings.Repeat("[", 10001) + strings.Repeat("]", 10001), wantErr: "not valid JSON"},

		{desc: "a duplicate key, the right hash last",
			data:    `{"matches":[{"id":"r","payload_hash":"` + wrongHash + `","payload_hash":"` + rightHash + `"}]}`,
			wantErr: `duplicate key "payload_hash" at matches[0]`},
		{desc: "a case variant of a key",
			data:    `{"matches":[{"id":"r","payload_hash":"` + wrongHash + `","Payload_Hash":"` + rightHash + `"}]}`,
			wantErr: `keys "payload_hash" and "Payload_Hash" at matches[0] differ only in letter case`},
		{desc: "an empty answer, then a record under the same key",
			data:    `{"matches":[],"matches":[{"id":"r","payload_hash":"` + rightHash + `"}]}`,
			wantErr: `duplicate key "matches"`},
		{desc: "a duplicate key written with an escape", data: `{"id":"a","\u0069d":"b"}`, wantErr: `duplicate key "id"`},
		{desc: "KELVIN SIGN for k", data: `{"op_key":"a","op_` + "\u212a" + `ey":"b"}`, wantErr: `"op_key" and "op_\u212aey"`},
		{desc: "KELVIN SIGN escaped", data: `{"op_key":"a","op_\u212Aey":"b"}`, wantErr: "differ only in letter case"},
		{desc: "LONG S for s", data: `{"status":"a","\u017ftatus":"b"}`, wantErr: "differ only in letter case"},
		{desc: "deep in arrays and objects", data: `{"a":[1,{"b":[{},{"c":{"x":1,"X":2}}]}]}`, wantErr: "at a[1].b[1].c"},
		{desc: "a long hostile key is cut short", data: `{"` + strings.Repeat("x", 200) + `":1,"` + strings.Repeat("X", 200) + `":2}`, wantErr: "…"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			err := providers.CheckJSON([]byte(tc.data))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckJSON: %v; want no error", err)
			case tc.wantErr == "":
				return
			case err == nil:
				t.Fatalf("CheckJSON = nil; want an error saying %q", tc.wantErr)
			}
			if !errors.Is(err, providers.ErrMalformedJSON) {
				t.Errorf("error %v does not match ErrMalformedJSON", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not say %q", err, tc.wantErr)
			}
			if len(err.Error()) > 300 {
				t.Errorf("error is %d bytes long: %q", len(err.Error()), err)
			}
			if strings.Contains(err.Error(), rightHash) || strings.Contains(err.Error(), wrongHash) {
				t.Errorf("error quotes a value: %q", err)
			}
		})
	}
}

// match is a record as a lookup protocol would carry it.
type match struct {
	ID          string `json:"id"`
	PayloadHash string `json:"payload_hash"`
	Recipient   string `json:"recipient,omitempty"`
	Ignored     string `json:"-"`
	Attempts    int
}

type answer struct {
	Matches []match `json:"matches"`
}

// withMeta has an embedded struct, whose fields are the outer object's.
type withMeta struct {
	meta
	ID string `json:"id"`
}

type meta struct {
	Source string `json:"source"`
}

// custom reads its own JSON: DecodeJSON leaves its keys to it.
type custom struct{ keys []string }

func (c *custom) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	for k := range m {
		c.keys = append(c.keys, k)
	}
	return nil
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		data    string
		into    func() any
		want    any
		wantErr string
	}{
		{
			desc: "exact keys",
			data: `{"matches":[{"id":"r","payload_hash":"` + rightHash + `","recipient":"x","Attempts":2,"other":[1]}]}`,
			into: func() any { return &answer{} },
			want: &answer{Matches: []match{{ID: "r", PayloadHash: rightHash, Recipient: "x", Attempts: 2}}},
		},
		{desc: "a key alone in another case is not the field", data: `{"matches":[{"id":"r","Payload_Hash":"` + rightHash + `"}]}`,
			into: func() any { return &answer{} }, wantErr: `key "Payload_Hash" at matches[0] is not "payload_hash"`},
		{desc: "ID is not id", data: `{"matches":[{"ID":"r"}]}`,
			into: func() any { return &answer{} }, wantErr: `key "ID" at matches[0] is not "id"`},
		{desc: "Matches is not matches", data: `{"Matches":[{"id":"r"}]}`,
			into: func() any { return &answer{} }, wantErr: `key "Matches" is not "matches"`},
		{desc: "KELVIN SIGN is not k", data: `{"\u212a":1}`,
			into: func() any {
				return &struct {
					K int `json:"k"`
				}{}
			}, wantErr: `is not "k"`},
		{desc: "a field without a tag is matched by its Go name, exactly", data: `{"matches":[{"id":"r","attempts":2}]}`,
			into: func() any { return &answer{} }, wantErr: `key "attempts" at matches[0] is not "Attempts"`},
		{desc: "a field left out of JSON takes no key", data: `{"matches":[{"id":"r","Ignored":"x"}]}`,
			into: func() any { return &answer{} }, want: &answer{Matches: []match{{ID: "r"}}}},
		{desc: "embedded fields are the object's", data: `{"id":"r","source":"s"}`,
			into: func() any { return &withMeta{} }, want: &withMeta{ID: "r", meta: meta{Source: "s"}}},
		{desc: "an embedded field in another case", data: `{"id":"r","Source":"s"}`,
			into: func() any { return &withMeta{} }, wantErr: `key "Source" is not "source"`},
		{desc: "a map takes its keys as they are", data: `{"Matches":[],"x":{"ID":1}}`,
			into: func() any { return &map[string]json.RawMessage{} },
			want: &map[string]json.RawMessage{"Matches": json.RawMessage(`[]`), "x": json.RawMessage(`{"ID":1}`)}},
		{desc: "numbers in an interface are as written", data: `{"amount":12345678901234567890,"rate":0.1}`,
			into: func() any { return &map[string]any{} },
			want: &map[string]any{"amount": json.Number("12345678901234567890"), "rate": json.Number("0.1")}},
		{desc: "a map of structs is checked", data: `{"a":{"ID":"r"}}`,
			into: func() any { return &map[string]match{} }, wantErr: `key "ID" at a is not "id"`},
		{desc: "a pointer to a struct is checked", data: `{"m":{"ID":"r"}}`,
			into: func() any {
				return &struct {
					M *match `json:"m"`
				}{}
			}, wantErr: `key "ID" at m is not "id"`},
		{desc: "a type with its own decoding reads its keys", data: `{"ID":1}`,
			into: func() any { return &custom{} }, want: &custom{keys: []string{"ID"}}},
		{desc: "duplicates are refused whatever the target", data: `{"a":1,"a":2}`,
			into: func() any { return &map[string]any{} }, wantErr: `duplicate key "a"`},
		{desc: "the wrong type does not quote the value", data: `{"matches":[{"id":"jane.doe@example.com","Attempts":"jane.doe@example.com"}]}`,
			into: func() any { return &answer{} }, wantErr: "a JSON string where int was expected at matches.Attempts"},
		{desc: "data after the value", data: `{"matches":[]}{"matches":[]}`,
			into: func() any { return &answer{} }, wantErr: "not valid JSON"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got := tc.into()
			err := providers.DecodeJSON([]byte(tc.data), got)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("DecodeJSON = nil, decoded %+v; want an error saying %q", got, tc.wantErr)
				}
				if !errors.Is(err, providers.ErrMalformedJSON) {
					t.Errorf("error %v does not match ErrMalformedJSON", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not say %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "jane.doe") {
					t.Errorf("error quotes a value: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeJSON: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(withMeta{}, custom{})); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeJSONNeedsAPointer(t *testing.T) {
	t.Parallel()
	if err := providers.DecodeJSON([]byte(`{}`), answer{}); err == nil {
		t.Error("DecodeJSON into a non-pointer = nil; want an error")
	}
}
