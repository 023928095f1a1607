package main

import (
	"strings"
	"testing"
	"time"
)

// TestParseWhen: the lists' --since and the export's window read the same
// times and durations — days included — and refuse the same words.
func TestParseWhen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "24h", want: now.Add(-24 * time.Hour)},
		{in: "30d", want: now.AddDate(0, 0, -30)},
		{in: "1.5d", want: now.Add(-36 * time.Hour)},
		{in: "0d", want: now},
		{in: "2026-11-29", want: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)},
		{in: "2026-11-29T10:00:00", want: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)},
		{in: "2026-11-29T10:00:00+02:00", want: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)},
		{in: "-1h", wantErr: "positive"},
		{in: "-2d", wantErr: "positive"},
		{in: "d", wantErr: "neither"},
		{in: "yesterday", wantErr: "neither"},
		{in: "30 days", wantErr: "neither"},
	} {
		got, err := parseWhen(tc.in, now)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseWhen(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
			}
		case err != nil || !got.Equal(tc.want):
			t.Errorf("parseWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
