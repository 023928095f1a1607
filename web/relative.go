package web

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// span says how long d (not negative) is, as a reviewer reads it at a
// glance: minutes under an hour, hours and minutes under ten hours, hours
// under a day, days and hours under a week, days beyond. It rounds down:
// "due in 59 min" is never yet an hour.
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under 1 min"
	case d < time.Hour:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d < 10*time.Hour:
		h, m := d/time.Hour, (d%time.Hour)/time.Minute
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d < 7*24*time.Hour:
		days, h := d/(24*time.Hour), (d%(24*time.Hour))/time.Hour
		if h == 0 {
			return fmt.Sprintf("%d d", days)
		}
		return fmt.Sprintf("%d d %d h", days, h)
	}
	return fmt.Sprintf("%d d", d/(24*time.Hour))
}

// dueWords says where deadline stands at now: "overdue 4 min", "due in
// 2 h", "due now".
func dueWords(deadline, now time.Time) string {
	switch d := deadline.Sub(now); {
	case d == 0:
		return "due now"
	case d < 0:
		return "overdue " + span(-d)
	default:
		return "due in " + span(d)
	}
}

// agoWords says how long before now at was: "4 min ago"; a time not yet
// past (clocks a little apart) is "just now".
func agoWords(at, now time.Time) string {
	if d := now.Sub(at); d > 0 {
		return span(d) + " ago"
	}
	return "just now"
}

// maxKey is how many characters of an op_key a queue row shows.
const maxKey = 23

// shortKey is key cut to maxKey characters, the cut marked with "…".
func shortKey(key string) string {
	if utf8.RuneCountInString(key) <= maxKey {
		return key
	}
	return string([]rune(key)[:maxKey-1]) + "…"
}
