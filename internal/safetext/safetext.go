// Package safetext makes text from outside — a provider's answer, a
// person's input, Slack's error — safe to print and to quote: one line of
// inert text ([Printable]), cut short without cutting a character in half
// ([Truncate], [TruncateChars]). Providers' adapters, review's evidence,
// the Slack messages, the outbox's errors, the logs and the CLI use it.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Truncate returns s cut to at most n bytes, on a rune boundary, with "…"
// when it was cut: for ids and excerpts quoted in errors and evidence.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// TruncateChars returns s cut to at most n characters (Unicode code points)
// with its "…" counted among them, when s has more: for text with a limit
// counted in characters, such as Slack's. It cuts only where a new
// character starts on screen: never inside a rune, nor between a letter
// and its combining marks, an emoji and its skin tone, variation selector,
// keycap or tags, the parts of an emoji ZWJ sequence (👩‍👩‍👧), or the two
// regional indicators of a flag. The cut may be shorter than n for that.
func TruncateChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	r := []rune(s)
	keep := n - 1
	for keep > 0 && !startsCluster(r, keep) {
		keep--
	}
	return string(r[:keep]) + "…"
}

// zwj is the zero width joiner, which glues emoji into one (👩‍💻).
const zwj = '\u200D'

// startsCluster reports whether r[i] starts what shows as a new character:
// a simplified reading of Unicode's grapheme cluster rules (UAX #29), enough
// for marks, emoji sequences and flags.
func startsCluster(r []rune, i int) bool {
	if extends(r[i]) || r[i-1] == zwj {
		return false
	}
	if regionalIndicator(r[i]) && regionalIndicator(r[i-1]) {
		// Flags pair indicators from the start of their run: r[i] starts
		// one when an even number of them precede it.
		run := 0
		for j := i - 1; j >= 0 && regionalIndicator(r[j]); j-- {
			run++
		}
		return run%2 == 0
	}
	return true
}

// extends reports whether c belongs to the character before it.
func extends(c rune) bool {
	switch {
	case c == zwj, c == '\u20E3', // keycap
		c >= '\uFE00' && c <= '\uFE0F', c >= 0xE0100 && c <= 0xE01EF, // variation selectors
		c >= 0x1F3FB && c <= 0x1F3FF, // skin tones
		c >= 0xE0020 && c <= 0xE007F: // tags (subdivision flags)
		return true
	}
	return unicode.In(c, unicode.Mn, unicode.Me, unicode.Mc)
}

func regionalIndicator(c rune) bool { return c >= 0x1F1E6 && c <= 0x1F1FF }

// Printable returns s as one line of inert text, whoever wrote it: safe to
// print on an operator's terminal, in a log line or in a Slack message.
// Text from a provider (an error body, a status word) or from a person can
// hold escape sequences — OSC 0 retitles the terminal, OSC 52 writes its
// clipboard, CSI moves the cursor and repaints what was printed before —
// and bidi controls that make text read other than it is (Trojan Source).
//
// What it guarantees: the result is valid UTF-8 (an invalid byte becomes
// U+FFFD) and holds no C0 control, no DEL, no C1 control (U+0080–U+009F),
// no bidi embedding, override or isolate (U+202A–U+202E, U+2066–U+2069)
// and no line or paragraph separator. Line breaks and tabs (\n \r \t \v
// \f, U+0085, U+2028, U+2029) become a space; every other such character
// is written as its Go escape, `\x1b` or `\u202e`, so a person still sees
// that it was there and which it was. Escaping the ESC or C1 introducer
// leaves every escape sequence (CSI, OSC, DCS, SOS, PM, APC) plain text,
// whatever follows it, terminated or not. Everything else is kept: other
// scripts, combining marks and emoji sequences (their joiners and
// selectors are not controls). Printable(Printable(s)) == Printable(s).
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unprintable(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, w := 0, 0; i < len(s); i += w {
		var r rune
		r, w = utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError:
			b.WriteRune(utf8.RuneError) // invalid UTF-8, or U+FFFD itself
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r < 0x80 && unprintable(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unprintable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unprintable reports whether r is a control character or a bidi control
// that [Printable] replaces.
func unprintable(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f: // C0, DEL, C1
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069': // bidi embeddings, overrides, isolates
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	}
	return false
}

// InertJSON is the JSON text b with every DEL, C1 control (U+0080–U+009F),
// bidi control (U+202A–U+202E, U+2066–U+2069) and line separator written
// as a \uXXXX escape, and invalid UTF-8 as \ufffd: encoding/json and
// PostgreSQL escape the C0 controls only, and a terminal acts on the
// others — U+009B starts a CSI like ESC [. Outside strings JSON holds none
// of them, so the escapes stand for the same characters: the data is
// unchanged, only its spelling.
func InertJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && w <= 1:
			out = append(out, `\ufffd`...)
		case r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+w]...)
		}
		i += w
	}
	return out
}

// FoldASCII returns s with the ASCII letters A–Z in lower case and every
// other byte as it is: the one case folding of identities written by
// people, such as the e-mails a sign-in proxy names. Unlike
// [strings.ToLower] or [strings.EqualFold] it never makes two different
// characters outside ASCII equal, nor one of them equal to an ASCII
// letter: the Kelvin sign U+212A stays apart from k, the long s U+017F
// from s, U+0130 İ from i, fullwidth letters from their ASCII look-alikes,
// and a precomposed é from e followed by a combining accent.
func FoldASCII(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		if c := b[j]; 'A' <= c && c <= 'Z' {
			b[j] = c + ('a' - 'A')
		}
	}
	return string(b)
}
