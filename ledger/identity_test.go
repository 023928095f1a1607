package ledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/ledger"
)

func TestCheckRecordID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		id   string
		ok   bool
	}{
		{"plain", "rec-W", true},
		{"composed", "caf\u00e9", true},
		{"inner space", "msg 42", true},
		{"empty", "", false},
		{"trailing space", "rec-W ", false},
		{"leading tab", "\trec-W", false},
		{"white space only", "   ", false},
		{"decomposed", "cafe\u0301", false},
		{"NUL", "rec\x00W", false},
		{"newline", "rec\nW", false},
		{"invalid UTF-8", "rec\xffW", false},
		{"at the limit", strings.Repeat("a", ledger.MaxRecordIDLength), true},
		{"over the limit", strings.Repeat("a", ledger.MaxRecordIDLength+1), false},
	} {
		err := ledger.CheckRecordID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckRecordID(%q) = %v, want ok=%v", tc.desc, tc.id, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ledger.ErrBadRecordID) {
			t.Errorf("%s: error %v does not match ErrBadRecordID", tc.desc, err)
		}
		if err != nil && len(tc.id) > 4 && strings.Contains(err.Error(), tc.id) {
			t.Errorf("%s: error quotes the id: %v", tc.desc, err)
		}
	}
}

func TestSameRecipient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		a, b string
		same bool
	}{
		{"equal", "kate@example.com", "kate@example.com", true},
		{"ASCII case and space", "  Kate@Example.COM ", "kate@example.com", true},
		{"KELVIN SIGN is not k", "kate@example.com", "\u212Aate@example.com", false},
		{"LONG S is not s", "sam@example.com", "\u017Fam@example.com", false},
		{"non-ASCII case is kept", "\u00c9lise@example.com", "\u00e9lise@example.com", false},
		{"different", "kate@example.com", "kat@example.com", false},
	} {
		if got := ledger.SameRecipient(tc.a, tc.b); got != tc.same {
			t.Errorf("%s: SameRecipient(%q, %q) = %v, want %v", tc.desc, tc.a, tc.b, got, tc.same)
		}
	}
}

func TestNormalizePhone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, in, want string
	}{
		{"E.164", "+15550100002", "+15550100002"},
		{"formatted", "+1 (555) 010-0002", "+15550100002"},
		{"dots and space", " +44 20 7946 0958 ", "+442079460958"},
		{"no country code", "(555) 010-0002", ""},
		{"letters", "+1 555 CALL NOW", ""},
		{"too short", "+1 555", ""},
	} {
		got, err := ledger.NormalizePhone(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: NormalizePhone(%q) = %q, want an error", tc.desc, tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: NormalizePhone(%q) = %q, %v; want %q", tc.desc, tc.in, got, err, tc.want)
		}
	}
}
