package ledger_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/ledger"
)

type hashVector struct {
	Desc      string `json:"desc"`
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
	SHA256    string `json:"sha256"`
	Error     bool   `json:"error"`
}

func loadVectors(t *testing.T) []hashVector {
	t.Helper()
	b, err := os.ReadFile("testdata/payload-hash-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Vectors []hashVector }
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) < 40 {
		t.Fatalf("only %d vectors", len(file.Vectors))
	}
	return file.Vectors
}

func TestPayloadHashVectors(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t) {
		t.Run(v.Desc, func(t *testing.T) {
			t.Parallel()
			canonical, err := ledger.Canonicalize([]byte(v.Input))
			hash, hashErr := ledger.PayloadHash([]byte(v.Input))
			if v.Error {
				if err == nil || hashErr == nil {
					t.Fatalf("Canonicalize(%q) = %q, want an error", v.Input, canonical)
				}
				if !errors.Is(err, ledger.ErrInvalidPayload) {
					t.Errorf("error %v does not wrap ErrInvalidPayload", err)
				}
				return
			}
			if err != nil || hashErr != nil {
				t.Fatalf("Canonicalize(%q): %v, %v", v.Input, err, hashErr)
			}
			if string(canonical) != v.Canonical {
				t.Errorf("Canonicalize(%q)\n got  %s\n want %s", v.Input, canonical, v.Canonical)
			}
			if hash != v.SHA256 {
				t.Errorf("PayloadHash(%q) = %s, want %s", v.Input, hash, v.SHA256)
			}
		})
	}
}

func TestPayloadHashOf(t *testing.T) {
	t.Parallel()
	got, err := ledger.PayloadHashOf(map[string]any{"to": "a@example.com", "template": "welcome", "locale": "en"})
	if err != nil {
		t.Fatal(err)
	}
	// The first vector in testdata: the same fields in another order.
	const want = "57901b0d5cdffed6c95af58e0c38d1d143cf64a7fb90936668b419f834c644fa"
	if got != want {
		t.Errorf("PayloadHashOf = %s, want %s", got, want)
	}
}

func TestCanonicalizeRejectsDeepNesting(t *testing.T) {
	t.Parallel()
	doc := make([]byte, 0, 20000)
	for range 10000 {
		doc = append(doc, '[')
	}
	for range 10000 {
		doc = append(doc, ']')
	}
	if _, err := ledger.Canonicalize(doc); !errors.Is(err, ledger.ErrInvalidPayload) {
		t.Fatalf("Canonicalize(10000 nested arrays) = %v, want ErrInvalidPayload", err)
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1.5e300,"\u00e9",null]`, `{"b":{"a":[]}}`, `"\ud83d\ude00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		canonical, err := ledger.Canonicalize(doc)
		if err != nil {
			return
		}
		// Canonical form is a fixed point and valid JSON.
		again, err := ledger.Canonicalize(canonical)
		if err != nil {
			t.Fatalf("canonical form %q does not canonicalize: %v", canonical, err)
		}
		if string(again) != string(canonical) {
			t.Fatalf("not idempotent: %q -> %q", canonical, again)
		}
		if !json.Valid(canonical) {
			t.Fatalf("canonical form %q is not valid JSON", canonical)
		}
	})
}

// TestDocSnippetIsTheTestedFile: the JavaScript users copy from
// docs/ledger.md is byte for byte the file node checks against the vectors.
func TestDocSnippetIsTheTestedFile(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../docs/ledger.md")
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile("payloadhash.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```js\n"+string(js)+"```") {
		t.Error("docs/ledger.md's JavaScript block differs from ledger/payloadhash.js; copy the file into docs/ledger.md")
	}
}
