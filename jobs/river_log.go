package jobs

import (
	"context"
	"log/slog"
)

// RiverLogger is the logger River's client gets: its INFO lines — a
// "Producer job counts" line every five seconds per queue among them — are
// about River's bookkeeping, not sweeper's work, so they are logged at
// DEBUG; River's warnings and errors stay as they are, their error under
// the key "error" as every other line's (River writes "err").
func RiverLogger(logger *slog.Logger) *slog.Logger {
	return slog.New(demoteInfo{logger.Handler()})
}

// demoteInfo is a handler that logs INFO records at DEBUG, and an "err"
// attribute as "error".
type demoteInfo struct{ slog.Handler }

func (h demoteInfo) Enabled(ctx context.Context, level slog.Level) bool {
	if level == slog.LevelInfo {
		level = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, level)
}

func (h demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	renamed := false
	r.Attrs(func(a slog.Attr) bool {
		renamed = a.Key == "err"
		return !renamed
	})
	if renamed {
		out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				a.Key = "error"
			}
			out.AddAttrs(a)
			return true
		})
		r = out
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoteInfo) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteInfo{h.Handler.WithAttrs(attrs)}
}

func (h demoteInfo) WithGroup(name string) slog.Handler {
	return demoteInfo{h.Handler.WithGroup(name)}
}
