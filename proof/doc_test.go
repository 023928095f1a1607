package proof_test

import (
	"github.com/sweeper/sweeper/proof"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocMaskingExamples: every "`input` → `masked`" pair of docs/sweeps.md's
// paragraph on masking is what MaskRecipient prints.
func TestDocMaskingExamples(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/sweeps.md")
	if err != nil {
		t.Fatal(err)
	}
	_, para, ok := strings.Cut(string(b), "Evidence never holds a raw recipient")
	if !ok {
		t.Fatal("docs/sweeps.md lost its paragraph on masking")
	}
	para, _, _ = strings.Cut(para, "\n\n")
	pairs := regexp.MustCompile("`([^`]+)` → `([^`]+)`").FindAllStringSubmatch(para, -1)
	if len(pairs) < 2 {
		t.Fatalf("docs/sweeps.md's masking paragraph has %d example(s), want an address and a phone number:\n%s", len(pairs), para)
	}
	for _, p := range pairs {
		if got := proof.MaskRecipient(p[1]); got != p[2] {
			t.Errorf("docs/sweeps.md says %s masks as %s; MaskRecipient prints %s", p[1], p[2], got)
		}
	}
}
