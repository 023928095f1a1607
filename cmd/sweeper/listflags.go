package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Bounds of --limit: enough for a screen or a script, never a whole
// table that nothing prunes.
const (
	defaultListLimit = 100
	maxListLimit     = 10000
)

// listFlags are a list command's --limit and --since.
type listFlags struct {
	limit int
	since string
}

// addListFlags adds --limit and --since to cmd; what is listed is its
// noun ("tickets", "rows").
func addListFlags(cmd *cobra.Command, noun string) *listFlags {
	l := &listFlags{}
	cmd.Flags().IntVar(&l.limit, "limit", defaultListLimit,
		fmt.Sprintf("print at most this many %s, oldest first (1 to %d); a line on stderr says when more exist", noun, maxListLimit))
	cmd.Flags().StringVar(&l.since, "since", "",
		"only the "+noun+" created since then: a duration back from now (90m, 24h, 7d) or a time (2026-11-29, 2026-11-29T10:00:00Z)")
	textFlags(cmd, "limit", "since")
	return l
}

// sinceTime is --since as a time, zero when it is not set; now is the
// time a duration counts back from.
func (l *listFlags) sinceTime(now time.Time) (time.Time, error) {
	if l.limit < 1 || l.limit > maxListLimit {
		return time.Time{}, usagef("--limit must be between 1 and %d, not %d", maxListLimit, l.limit)
	}
	s := strings.TrimSpace(l.since)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := parseWhen(s, now)
	if err != nil {
		return time.Time{}, usagef("--since %v", err)
	}
	return t, nil
}

// parseWhen reads a time a person gives a command: a time (see
// [parseTime]) or a duration before now — Go's (90m, 24h) or whole days
// (7d). The lists' --since and the export's window read times with it.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, ok := parseTime(s); ok {
		return t, nil
	}
	d, err := parseDays(s)
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("%q is neither a duration (24h, 7d) nor a time (2026-11-29, 2026-11-29T10:00:00Z)", s)
	case d < 0:
		return time.Time{}, fmt.Errorf("%q: a duration before now is positive", s)
	}
	return now.Add(-d), nil
}

// parseDays reads a duration a person gives a command: Go's (90m, 24h) or
// whole days (7d).
func parseDays(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil {
		d, err = time.ParseDuration(days + "h")
		d *= 24
	}
	return d, err
}

// parseTime reads a time a person gives a command: RFC 3339, or a date
// and time without a zone, or a date (midnight), both in UTC.
func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// trailer says how many of what a list printed and, when the list filled
// --limit, that more may exist. more is whether a row past the limit was
// found.
func (l *listFlags) trailer(n int, noun string, more bool) string {
	if more {
		return fmt.Sprintf("%d %s shown, the oldest; more exist: raise --limit (%d) or narrow with --since", n, noun, l.limit)
	}
	return fmt.Sprintf("%d %s", n, noun)
}
