package proof_test

import (
	"github.com/sweeper/sweeper/proof"
	"testing"
)

// TestStorableText: what a provider's error text may hold that the
// database refuses is removed or replaced before it is stored.
func TestStorableText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":          "plain",
		"nul\x00inside":  "nulinside",
		"bad \xff utf-8": "bad \uFFFD utf-8",
		"":               "",
	} {
		if got := proof.StorableText(in); got != want {
			t.Errorf("StorableText(%q) = %q, want %q", in, got, want)
		}
	}
}
