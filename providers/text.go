package providers

import (
	"net/http"
	"strconv"
	"strings"
	"time"
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
	return RetryAfterWithin(h, maxRetryAfter)
}

// RetryAfterWithin is [ParseRetryAfter] with most, not an hour, as the
// longest wait: for a provider that is out for longer — a quota of the day
// spent, whose Retry-After may be many hours ([OutUntil]).
func RetryAfterWithin(h string, most time.Duration) (wait time.Duration, ok bool) {
	h = strings.TrimSpace(h)
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		// Capped before multiplying: a large value would overflow.
		return time.Duration(min(secs, int(most/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(time.Until(t), 0), most), true
	}
	return time.Second, false
}
