package web

import (
	"testing"
	"time"
)

func TestRelativeTimeInWords(t *testing.T) {
	now := time.Date(2026, 12, 4, 13, 17, 40, 0, time.UTC)
	for _, tc := range []struct {
		desc     string
		at       time.Time
		due, ago string
	}{
		{"now", now, "due now", "just now"},
		{"seconds ahead", now.Add(30 * time.Second), "due in under 1 min", "just now"},
		{"seconds past", now.Add(-30 * time.Second), "overdue under 1 min", "under 1 min ago"},
		{"minutes past", now.Add(-4*time.Minute - 10*time.Second), "overdue 4 min", "4 min ago"},
		{"an hour ahead, nearly", now.Add(59*time.Minute + 59*time.Second), "due in 59 min", "just now"},
		{"an hour past", now.Add(-time.Hour), "overdue 1 h", "1 h ago"},
		{"hours and minutes ahead", now.Add(3*time.Hour + 59*time.Minute + 50*time.Second), "due in 3 h 59 min", "just now"},
		{"two hours ahead", now.Add(2 * time.Hour), "due in 2 h", "just now"},
		{"past ten hours, hours alone", now.Add(-10*time.Hour - 20*time.Minute), "overdue 10 h", "10 h ago"},
		{"a day and an hour", now.Add(-25 * time.Hour), "overdue 1 d 1 h", "1 d 1 h ago"},
		{"three days", now.Add(-3*24*time.Hour - 5*time.Hour - 30*time.Minute), "overdue 3 d 5 h", "3 d 5 h ago"},
		{"over a week, days alone", now.Add(-9*24*time.Hour - 5*time.Hour), "overdue 9 d", "9 d ago"},
	} {
		if got := dueWords(tc.at, now); got != tc.due {
			t.Errorf("%s: dueWords = %q, want %q", tc.desc, got, tc.due)
		}
		if got := agoWords(tc.at, now); got != tc.ago {
			t.Errorf("%s: agoWords = %q, want %q", tc.desc, got, tc.ago)
		}
	}
}

func TestShortOpKey(t *testing.T) {
	for in, want := range map[string]string{
		"pr-2": "pr-2",
		"password-resets-2026-12-04-user-48213-attempt-1": "password-resets-2026-1…",
		"exactly-twenty-three-ch":                         "exactly-twenty-three-ch",
		"ключ-операции-очень-длинный-ключ":                "ключ-операции-очень-дл…",
	} {
		if got := shortKey(in); got != want {
			t.Errorf("shortKey(%q) = %q, want %q", in, got, want)
		}
	}
}
