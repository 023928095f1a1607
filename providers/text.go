package providers

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxRetryAfter caps a provider's requested wait: a larger value is a
// mistake or hostile, and the lookup budget still bounds the whole.
const maxRetryAfter = time.Hour

// RetryAfter reads a Retry-After header value — seconds or an HTTP date —
// as a wait of at most an hour; an absent or unreadable value is one
// second.
func RetryAfter(h string) time.Duration {
	wait, _ := ParseRetryAfter(h)
	return wait
}

// ParseRetryAfter is [RetryAfter] that also reports whether the value was
// read, for a caller with another source to fall back on.
func ParseRetryAfter(h string) (wait time.Duration, ok bool) {
	h = strings.TrimSpace(h)
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		// Capped before multiplying: a large value would overflow.
		return time.Duration(min(secs, int(maxRetryAfter/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter), true
	}
	return time.Second, false
}

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
