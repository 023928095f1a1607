package config

import (
	"fmt"
	"strings"
	"time"
)

// Duration is a TOML string in Go's duration syntax ("90s", "15m", "24h").
//
// A malformed value does not stop decoding: it is kept and reported by
// validation under its key, with every other problem, rather than ending the
// load at the first one.
type Duration struct {
	time.Duration
	err error
	set bool
}

// NewDuration returns a Duration holding d.
func NewDuration(d time.Duration) Duration { return Duration{Duration: d, set: true} }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(text []byte) error {
	d.set = true
	parsed, err := time.ParseDuration(string(text))
	if err != nil {
		d.err = fmt.Errorf("invalid duration %q: use a number and a unit, e.g. 90s, 15m, 24h", text)
		return nil
	}
	d.Duration = parsed
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(formatDuration(d.Duration)), nil
}

// Err returns the parse error of a malformed value, or nil.
func (d Duration) Err() error { return d.err }

// String returns the duration in the shortest form config accepts.
func (d Duration) String() string { return formatDuration(d.Duration) }

// formatDuration writes 15m rather than 15m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
