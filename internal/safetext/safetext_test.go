package safetext_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sweeper/sweeper/internal/safetext"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, s string
		n       int
		want    string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 3, "abc…"},
		{"never inside a rune", "aé", 2, "a…"},
		{"emoji", "😀😀", 5, "😀…"},
	} {
		if got := safetext.Truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("%s: Truncate(%q, %d) = %q, want %q", tc.desc, tc.s, tc.n, got, tc.want)
		}
	}
}

func TestTruncateChars(t *testing.T) {
	t.Parallel()
	const (
		family = "👩\u200D👩\u200D👧" // 5 code points, one on screen
		thumb  = "👍🏽"              // thumbs up and a skin tone
		flags  = "🇫🇷🇩🇪"            // two flags, four indicators
		keycap = "1\uFE0F\u20E3"
	)
	for _, tc := range []struct {
		desc, s string
		n       int
		want    string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 4, "abc…"},
		{"characters, not bytes", "éééé", 4, "éééé"},
		{"astral characters count one", "😀😀😀", 3, "😀😀😀"},
		{"astral cut", "😀😀😀😀", 3, "😀😀…"},
		{"combining mark stays with its letter", "ae\u0301b", 3, "a…"},
		{"skin tone stays with its emoji", "a" + thumb + "b", 3, "a…"},
		{"ZWJ sequence whole", family + "xy", 6, family + "…"},
		{"ZWJ sequence never halved", "a" + family + "x", 5, "a…"},
		{"cut right after a ZWJ", "a" + family, 4, "a…"},
		{"flags paired", flags + "x", 4, "🇫🇷…"},
		{"flag never halved", "a" + flags + "x", 3, "a…"},
		{"keycap whole", "a" + keycap + "b", 4, "a…"},
		{"no room but the ellipsis", "abc", 1, "…"},
		{"no room at all", "abc", 0, ""},
	} {
		got := safetext.TruncateChars(tc.s, tc.n)
		if got != tc.want {
			t.Errorf("%s: TruncateChars(%q, %d) = %q, want %q", tc.desc, tc.s, tc.n, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > max(tc.n, 0) || !utf8.ValidString(got) {
			t.Errorf("%s: %q has %d characters (limit %d) or is not UTF-8", tc.desc, got, n, tc.n)
		}
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, in, want string
	}{
		{desc: "OSC 0 sets the window title", in: "boom \x1b]0;pwned\x07 end", want: `boom \x1b]0;pwned\x07 end`},
		{desc: "OSC 52 writes the clipboard", in: "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\", want: `\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\`},
		{desc: "CSI clears the screen and colours", in: "\x1b[2J\x1b[31mred\x1b[0m", want: `\x1b[2J\x1b[31mred\x1b[0m`},
		{desc: "DCS", in: "\x1bP1$r0m\x1b\\x", want: `\x1bP1$r0m\x1b\x`},
		{desc: "APC, PM and SOS", in: "\x1b_a\x1b\\\x1b^b\x1b\\\x1bXc\x1b\\", want: `\x1b_a\x1b\\x1b^b\x1b\\x1bXc\x1b\`},
		{desc: "a lone ESC at the end", in: "tail\x1b", want: `tail\x1b`},
		{desc: "C1 CSI as a rune", in: "\u009b31mred", want: `\u009b31mred`},
		{desc: "C1 OSC and ST as runes", in: "\u009d0;t\u009c", want: `\u009d0;t\u009c`},
		{desc: "DEL", in: "a\x7fb", want: `a\x7fb`},
		{desc: "NUL and BEL", in: "a\x00b\x07", want: `a\x00b\x07`},
		{desc: "backspace over text", in: "paid\b\b\b\bfailed", want: `paid\x08\x08\x08\x08failed`},
		{desc: "bidi overrides and isolates", in: "a\u202eb\u202ac\u202bd\u202ce\u202df\u2066g\u2067h\u2068i\u2069", want: `a\u202eb\u202ac\u202bd\u202ce\u202df\u2066g\u2067h\u2068i\u2069`},
		{desc: "line breaks and tabs become spaces", in: "one\ntwo\r\nthree\tfour\vfive\fsix\u2028seven\u2029eight\u0085nine", want: "one two  three four five six seven eight nine"},
		{desc: "invalid UTF-8", in: "a\xffb\xc3", want: "a\uFFFDb\uFFFD"},
		{desc: "plain text", in: "twilio: HTTP 503: Service Unavailable (code 20429)", want: "twilio: HTTP 503: Service Unavailable (code 20429)"},
		{desc: "emoji sequences, flags and skin tones", in: "👩‍👩‍👧 🇫🇷 👍🏽 1️⃣ ✅", want: "👩‍👩‍👧 🇫🇷 👍🏽 1️⃣ ✅"},
		{desc: "non-Latin scripts and marks", in: "日本語 العربية עברית Ελληνικά हिन्दी e\u0301", want: "日本語 العربية עברית Ελληνικά हिन्दी e\u0301"},
		{desc: "a backslash stays", in: `C:\path\x1b`, want: `C:\path\x1b`},
		{desc: "empty", in: "", want: ""},
	} {
		if got := safetext.Printable(tc.in); got != tc.want {
			t.Errorf("%s: Printable(%q) = %q, want %q", tc.desc, tc.in, got, tc.want)
		}
	}
}

// TestPrintableHoldsNoControl: whatever the input, the output is valid
// UTF-8 without a control character, a bidi control or a line separator.
func TestPrintableHoldsNoControl(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 1))
	alphabet := []rune("a \x00\x07\x08\t\n\r\x1b[]\\P_^X;\x7f\u0080\u0085\u009b\u009c\u009d\u00a0\u061c\u200d\u200e\u2028\u2029\u202a\u202e\u2066\u2069\ufeff日👩")
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(30) {
			if rng.IntN(10) == 0 {
				b.WriteByte(byte(0x80 + rng.IntN(0x80))) // stray byte: invalid UTF-8
				continue
			}
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		in := b.String()
		got := safetext.Printable(in)
		if !utf8.ValidString(got) {
			t.Fatalf("Printable(%q) = %q: not UTF-8", in, got)
		}
		for _, r := range got {
			if unsafeRune(r) {
				t.Fatalf("Printable(%q) = %q holds %U", in, got, r)
			}
		}
		if again := safetext.Printable(got); again != got {
			t.Fatalf("Printable is not idempotent: %q → %q → %q", in, got, again)
		}
	}
}

func unsafeRune(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x2028 || r == 0x2029
}

// TestFoldASCIIFoldsOnlyASCII: ASCII letters fold, and nothing outside
// ASCII ever becomes equal to something else — neither to an ASCII letter
// (the folds of Unicode case mapping) nor to another character.
func TestFoldASCIIFoldsOnlyASCII(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ desc, a, b string }{
		{"ASCII letters fold", "Kate@Example.COM", "kate@example.com"},
		{"digits and signs stay", "a.b+1_2@x-y.io", "a.b+1_2@x-y.io"},
		{"non-ASCII stays as written", "josé@example.com", "josé@example.com"},
	} {
		if got := safetext.FoldASCII(tc.a); got != safetext.FoldASCII(tc.b) {
			t.Errorf("%s: FoldASCII(%q) = %q, want it equal to FoldASCII(%q) = %q", tc.desc, tc.a, got, tc.b, safetext.FoldASCII(tc.b))
		}
	}
	for _, tc := range []struct{ desc, a, b string }{
		{"the Kelvin sign is not k", "\u212Aate@example.com", "kate@example.com"},
		{"the Kelvin sign is not K", "\u212Aate@example.com", "Kate@example.com"},
		{"the long s is not s", "\u017Fam@example.com", "sam@example.com"},
		{"dotted capital I is not i", "\u0130ris@example.com", "iris@example.com"},
		{"dotless i is not i", "\u0131ris@example.com", "iris@example.com"},
		{"dotless i is not I", "\u0131ris@example.com", "Iris@example.com"},
		{"fullwidth letters are not ASCII", "\uFF4Bate@example.com", "kate@example.com"},
		{"fullwidth capitals are not ASCII", "\uFF2Bate@example.com", "kate@example.com"},
		{"non-ASCII capitals do not fold", "JOSÉ@example.com", "josé@example.com"},
		{"precomposed is not combining", "jos\u00e9@example.com", "jose\u0301@example.com"},
		{"a combining accent is not nothing", "jose\u0301@example.com", "jose@example.com"},
		{"Greek capital sigma is not sigma", "\u03a3am@example.com", "\u03c3am@example.com"},
	} {
		if got, other := safetext.FoldASCII(tc.a), safetext.FoldASCII(tc.b); got == other {
			t.Errorf("%s: FoldASCII(%q) = FoldASCII(%q) = %q, want them apart", tc.desc, tc.a, tc.b, got)
		}
	}
}
