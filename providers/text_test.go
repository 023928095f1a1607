package providers_test

import (
	"net/http"
	"testing"
	"time"

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
