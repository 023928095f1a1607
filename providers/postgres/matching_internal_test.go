package postgres

import "testing"

// TestMatchingReadsTheQueryAsSQL: only an @op_key the query binds makes
// it match by key; one in a comment or a string literal does not.
func TestMatchingReadsTheQueryAsSQL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, query string
		byKey       bool
	}{
		{"bound", "SELECT id FROM sent WHERE op_key = @op_key", true},
		{"by recipient", "SELECT id FROM sent WHERE recipient = @recipient AND created_at BETWEEN @since AND @until", false},
		{"in a comment", "SELECT id FROM sent WHERE recipient = @recipient -- TODO add @op_key", false},
		{"in a block comment", "SELECT id FROM sent /* @op_key */ WHERE recipient = @recipient", false},
		{"in a string", "SELECT id FROM sent WHERE recipient = @recipient AND note <> '@op_key'", false},
	} {
		if got := (&Adapter{query: tc.query}).Matching().ByKey; got != tc.byKey {
			t.Errorf("%s: ByKey = %v, want %v", tc.desc, got, tc.byKey)
		}
	}
}
