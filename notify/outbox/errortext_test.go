package outbox

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// controlText is what a provider's error can hold: OSC 0 and OSC 52, CSI,
// a C1 CSI, DEL, NUL, a bidi override, and line breaks of every kind.
const controlText = "boom \x1b]0;pwned\x07\x1b]52;c;Y3VybA==\x1b\\\x1b[2J\x1b[31mred\x1b[0m\u009b31m\x7f\x00\u202eevil\u202c\r\nnext\u2028line\tend"

// TestErrorTextInert: what the outbox stores of an error is one line of
// inert text, NUL and invalid UTF-8 included, bounded.
func TestErrorTextInert(t *testing.T) {
	t.Parallel()
	for _, in := range []string{controlText, "bad \xff byte", strings.Repeat("é\x1b", 3000)} {
		got := errorText(fmt.Errorf("slack: %s", in))
		if !utf8.ValidString(got) || len(got) > 2000+len("…") || !strings.HasPrefix(got, "slack: ") {
			t.Errorf("errorText(%q) = %q: not UTF-8, too long, or not the text", in, got)
		}
		for _, r := range got {
			if r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r == 0x2028 {
				t.Errorf("errorText(%q) = %q holds %U", in, got, r)
				break
			}
		}
	}
}
