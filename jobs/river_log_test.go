package jobs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestRiverLoggerDemotesInfo: River's INFO lines are kept out of an INFO
// log, its warnings are not.
func TestRiverLoggerDemotesInfo(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := RiverLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})).With("component", "river"))
	logger.Info("lookup: Producer job counts", "running", 3)
	logger.Warn("lookup: job rescued")
	out := buf.String()
	if strings.Contains(out, "Producer job counts") || !strings.Contains(out, "job rescued") || !strings.Contains(out, "component=river") {
		t.Errorf("River's log at INFO:\n%s\nwant the warning only, with its attributes", out)
	}
	buf.Reset()
	debug := RiverLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	debug.Info("lookup: Producer job counts")
	if !strings.Contains(buf.String(), "level=DEBUG") {
		t.Errorf("at DEBUG: %q, want the line at DEBUG", buf.String())
	}
}

// TestRiverLoggerNamesErrorsError: River writes its errors under "err";
// sweeper's log has one key for errors, "error", whoever wrote the line.
func TestRiverLoggerNamesErrorsError(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := RiverLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	logger.Error("producer: Error fetching jobs", slog.String("err", "connection refused"), slog.String("queue", "lookup"))
	logger.Warn("no error here", "errors", 2)
	out := buf.String()
	for _, want := range []string{`msg="producer: Error fetching jobs" error="connection refused" queue=lookup`, `msg="no error here" errors=2`} {
		if !strings.Contains(out, want) {
			t.Errorf("River's log:\n%s\nwant %s", out, want)
		}
	}
	if strings.Contains(out, " err=") {
		t.Errorf("River's log still says err:\n%s", out)
	}
}
