package providers

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReplaceFoldIsTheRegexp checks replaceFold against what it stands in
// for — one case-insensitive regexp of the forms, longest first — on
// random texts built from pieces that fold into each other (the Kelvin
// sign and k, ſ and s, Σ σ ς), multi-byte runes and the forms themselves.
func TestReplaceFoldIsTheRegexp(t *testing.T) {
	t.Parallel()
	pieces := []string{"a", "K", "k", "\u212a", "s", "S", "\u017f", "Σ", "σ", "ς", "é", "É", "@", ".", " ", "%40", "x", "日本"}
	rng := rand.New(rand.NewPCG(7, 11))
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 20000 {
		forms := []string{word(1 + rng.IntN(4)), word(1 + rng.IntN(6))}
		text := word(rng.IntN(30))
		if rng.IntN(2) == 0 {
			text += forms[rng.IntN(2)] + word(rng.IntN(5))
		}
		slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
		quoted := make([]string, len(forms))
		for j, f := range forms {
			quoted[j] = regexp.QuoteMeta(f)
		}
		want := regexp.MustCompile(`(?i)(?:`+strings.Join(quoted, "|")+`)`).ReplaceAllLiteralString(text, "[r]")
		if got := replaceFold(text, forms, "[r]"); got != want {
			t.Fatalf("case %d: replaceFold(%q, %q) = %q; the regexp gives %q", i, text, forms, got, want)
		}
	}
}

// BenchmarkRedactText is the redaction of one evidence text, as every
// settled operation's evidence is redacted.
func BenchmarkRedactText(b *testing.B) {
	text := strings.Repeat("lookup of order-4711 for jane.doe@example.com answered 200 with one record; ", 4)
	for b.Loop() {
		RedactText(text, "jane.doe@example.com")
	}
}
