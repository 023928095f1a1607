package providers_test

import (
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sweeper/sweeper/providers"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, h string
		want    time.Duration
		ok      bool
	}{
		{"seconds", "7", 7 * time.Second, true},
		{"spaces", " 2 ", 2 * time.Second, true},
		{"zero", "0", 0, true},
		{"capped", "99999999999", time.Hour, true},
		{"absent", "", time.Second, false},
		{"negative", "-5", time.Second, false},
		{"garbage", "soon", time.Second, false},
		{"a date in the past", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0, true},
	} {
		got, ok := providers.ParseRetryAfter(tc.h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: ParseRetryAfter(%q) = %s, %v; want %s, %v", tc.desc, tc.h, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := providers.ParseRetryAfter(time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)); !ok || got < 80*time.Second || got > 90*time.Second {
		t.Errorf("a date 90s ahead: %s, %v", got, ok)
	}
}

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
		if got := providers.Truncate(tc.s, tc.n); got != tc.want {
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
		got := providers.TruncateChars(tc.s, tc.n)
		if got != tc.want {
			t.Errorf("%s: TruncateChars(%q, %d) = %q, want %q", tc.desc, tc.s, tc.n, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > max(tc.n, 0) || !utf8.ValidString(got) {
			t.Errorf("%s: %q has %d characters (limit %d) or is not UTF-8", tc.desc, got, n, tc.n)
		}
	}
}
