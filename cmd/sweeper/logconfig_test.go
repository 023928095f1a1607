package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
)

// TestConfiguredLogger: the [log] section's level and format decide what
// every command writes; a buffer is not a terminal, so the default format
// is JSON. A floor raises the level for a command that says what it did
// itself (migrate), never lowers it.
func TestConfiguredLogger(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc   string
		log    config.Log
		floor  slog.Level
		want   []string
		absent []string
	}{
		{desc: "defaults: INFO and up, JSON off a terminal", log: config.Log{Level: "info"}, floor: slog.LevelDebug,
			want: []string{`"level":"INFO","msg":"info line"`, `"level":"WARN","msg":"warn line"`}, absent: []string{"debug line"}},
		{desc: "debug, text", log: config.Log{Level: "debug", Format: "text"}, floor: slog.LevelDebug,
			want: []string{`level=DEBUG msg="debug line"`, `level=INFO msg="info line"`}},
		{desc: "warn, json", log: config.Log{Level: "warn", Format: "json"}, floor: slog.LevelDebug,
			want: []string{`"level":"WARN","msg":"warn line"`, `"level":"ERROR","msg":"error line"`}, absent: []string{"info line"}},
		{desc: "error only", log: config.Log{Level: "error"}, floor: slog.LevelDebug,
			want: []string{`"msg":"error line"`}, absent: []string{"warn line", "info line"}},
		{desc: "a floor above the level", log: config.Log{Level: "debug"}, floor: slog.LevelWarn,
			want: []string{"warn line"}, absent: []string{"info line", "debug line"}},
		{desc: "a floor below the level", log: config.Log{Level: "error"}, floor: slog.LevelWarn,
			want: []string{"error line"}, absent: []string{"warn line"}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			logger := configuredLogger(&buf, c.log, c.floor)
			logger.Debug("debug line")
			logger.Info("info line")
			logger.Warn("warn line")
			logger.Error("error line", "error", errors.New("boom"))
			out := buf.String()
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("log lacks %s:\n%s", w, out)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(out, a) {
					t.Errorf("log holds %s:\n%s", a, out)
				}
			}
		})
	}
}
