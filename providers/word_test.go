package providers

import (
	"strings"
	"testing"
)

func TestWord(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"delivered", 24, "delivered"},
		{"ch_3MtwBwLkdIwHu7ix28a3tqPa", 64, "ch_3MtwBwLkdIwHu7ix28a3tqPa"},
		{"calendar#event", 40, "calendar#event"},
		{"rate-limit_exceeded", 40, "rate-limit_exceeded"},
		{"", 40, "-"},
		{strings.Repeat("a", 41), 40, "-"},
		{strings.Repeat("a", 40), 40, strings.Repeat("a", 40)},
		{"jane@example.com", 40, "-"},
		{"+15551234567", 40, "-"},
		{"two words", 40, "-"},
		{"line\nbreak", 40, "-"},
		{"\x1b[31mred", 40, "-"},
		{"caf\u00e9", 40, "-"},
		{"\xff\xfe", 40, "-"},
	} {
		if got := Word(c.in, c.max); got != c.want {
			t.Errorf("Word(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
