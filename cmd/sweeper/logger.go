package main

import (
	"io"
	"log/slog"
	"os"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/logs"
	"github.com/sweeper/sweeper/internal/safetext"
)

// newLogger is the logger of a command before its configuration is read:
// INFO and up, text to a terminal and JSON anywhere else (a container's log
// collector, a file). Once the configuration is read, [configuredLogger]
// replaces it.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(logs.NewDedup(newLogHandler(w, slog.LevelInfo, isTerminal(w)), logs.DefaultWindow))
}

// configuredLogger is every command's logger once its configuration is
// read: log.level and up, in log.format (by default text to a terminal and
// JSON anywhere else), identical error lines held back and counted
// (internal/logs). floor raises the level for a command whose INFO lines
// would repeat what it prints itself.
func configuredLogger(w io.Writer, l config.Log, floor slog.Level) *slog.Logger {
	return slog.New(logs.NewDedup(newLogHandler(w, max(l.SlogLevel(), floor), logText(w, l)), logs.DefaultWindow))
}

// reloadableLogger is the daemon's logger: log.level, held in level,
// which a configuration reload sets, and log.format as [configuredLogger].
func reloadableLogger(w io.Writer, l config.Log, level *slog.LevelVar) *slog.Logger {
	level.Set(l.SlogLevel())
	return slog.New(logs.NewDedup(newLogHandler(w, level, logText(w, l)), logs.DefaultWindow))
}

// logText is whether l's logs are text (else JSON) on w.
func logText(w io.Writer, l config.Log) bool {
	switch l.Format {
	case "text":
		return true
	case "json":
		return false
	}
	return isTerminal(w)
}

// newLogHandler writes text for a terminal, JSON otherwise. Neither
// prints a character a terminal acts on, whatever a provider's error or a
// person's input holds: the text handler quotes every value holding one
// (strconv.Quote writes ESC as \x1b, U+202E as \u202e), and the JSON
// handler's lines go through [safetext.InertJSON], for the C1 and bidi controls it
// leaves raw — a JSON log is read with tail on a terminal too.
func newLogHandler(w io.Writer, level slog.Leveler, text bool) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if text {
		return slog.NewTextHandler(w, opts)
	}
	return slog.NewJSONHandler(inertWriter{w}, opts)
}

// inertWriter writes JSON through [safetext.InertJSON]. A slog handler writes each
// record in one Write, so no character is split between two.
type inertWriter struct{ w io.Writer }

func (i inertWriter) Write(p []byte) (int, error) {
	if _, err := i.w.Write(safetext.InertJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
