// Package logs holds the handler that keeps one failing dependency from
// flooding the log. A database that goes away
// makes River's fetch loops, the sweep and the Slack dispatcher fail again
// and again with the same error; an operator needs the first line and how
// many followed, not dozens of identical lines a second.
package logs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultWindow is how long identical error lines are held back after the
// first one.
const DefaultWindow = 30 * time.Second

// maxKeys bounds the distinct lines held back at once: past it, lines pass
// as they are (an error text carrying an id per line must not grow memory
// without end).
const maxKeys = 1000

// Dedup is a slog.Handler that lets the first WARN or ERROR line carrying
// an error through, holds back the lines identical to it — same level,
// message and error text, whatever their time and other attributes — for a
// window, then writes one line with the same level, message and error and
// the count of lines held back (more_like_this). While they keep coming, a
// line with the count is written each window; a window without one ends
// the key, and the next such line is written at once. Lines below WARN, and
// lines without an error, always pass. Two lines about different
// providers (their "provider" attribute) are not identical: one provider's
// outage does not hide another's. Nor are a retry loop's numbered tries
// (an "attempt" attribute), bounded by their own backoff. Safe for concurrent use; handlers
// derived with WithAttrs and WithGroup share the count.
type Dedup struct {
	next   slog.Handler
	prefix string // groups opened, part of the key
	s      *dedupState
}

type dedupState struct {
	window time.Duration
	after  func(time.Duration, func())

	mu   sync.Mutex
	seen map[dedupKey]*held
}

type dedupKey struct {
	level      slog.Level
	msg, error string
	provider   string
	attempt    int64
}

// held is a key's window: the handler its first line went through (its
// attributes and groups), and the lines held back since.
type held struct {
	next  slog.Handler
	count int
}

// NewDedup returns next behind a [Dedup] holding identical lines back for
// window (DefaultWindow when not positive).
func NewDedup(next slog.Handler, window time.Duration) *Dedup {
	return newDedup(next, window, func(d time.Duration, f func()) { time.AfterFunc(d, f) })
}

// newDedup is NewDedup with the timer given: after runs f once d has
// passed.
func newDedup(next slog.Handler, window time.Duration, after func(time.Duration, func())) *Dedup {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Dedup{next: next, s: &dedupState{window: window, after: after, seen: map[dedupKey]*held{}}}
}

// Enabled is next's.
func (h *Dedup) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle writes r, unless a line identical to it was written within the
// window.
func (h *Dedup) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	k, ok := keyOf(r)
	if !ok {
		return h.next.Handle(ctx, r)
	}
	k.msg = h.prefix + k.msg
	s := h.s
	s.mu.Lock()
	if w, ok := s.seen[k]; ok {
		w.count++
		s.mu.Unlock()
		return nil
	}
	if len(s.seen) < maxKeys {
		s.seen[k] = &held{next: h.next}
		s.after(s.window, func() { s.flush(k) })
	}
	s.mu.Unlock()
	return h.next.Handle(ctx, r)
}

// flush ends k's window: the lines held back in it, if any, are written as
// one, and the next window starts; a window with none ends the key.
func (s *dedupState) flush(k dedupKey) {
	s.mu.Lock()
	w, ok := s.seen[k]
	if !ok {
		s.mu.Unlock()
		return
	}
	n := w.count
	if n == 0 {
		delete(s.seen, k)
		s.mu.Unlock()
		return
	}
	w.count = 0
	s.after(s.window, func() { s.flush(k) })
	s.mu.Unlock()
	r := slog.NewRecord(time.Now(), k.level, k.msg, 0)
	if k.provider != "" {
		r.AddAttrs(slog.String("provider", k.provider))
	}
	r.AddAttrs(slog.String("error", k.error), slog.Int("more_like_this", n),
		slog.String("note", fmt.Sprintf("%d more like this in the last %s", n, s.window)))
	w.next.Handle(context.Background(), r) //nolint:errcheck // a log line has nowhere to report its own failure
}

// WithAttrs returns a handler adding attrs, sharing h's count.
func (h *Dedup) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Dedup{next: h.next.WithAttrs(attrs), prefix: h.prefix, s: h.s}
}

// WithGroup returns a handler opening group name, sharing h's count.
func (h *Dedup) WithGroup(name string) slog.Handler {
	return &Dedup{next: h.next.WithGroup(name), prefix: h.prefix + name + ".", s: h.s}
}

// keyOf is r's key: its level and message, the text of its error
// attribute ("error", or "err" as libraries such as River write it), its
// provider and its attempt. ok is false without an error, or with a nil
// one.
func keyOf(r slog.Record) (k dedupKey, ok bool) {
	k.level, k.msg = r.Level, r.Message
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch a.Key {
		case "attempt":
			if v.Kind() == slog.KindInt64 {
				k.attempt = v.Int64()
			}
		case "provider":
			k.provider = v.String()
		case "error", "err":
			switch {
			case ok:
			case v.Kind() == slog.KindAny && v.Any() == nil:
			case v.Kind() == slog.KindAny:
				if err, isErr := v.Any().(error); isErr {
					k.error, ok = err.Error(), true
				} else {
					k.error, ok = v.String(), true
				}
			default:
				k.error, ok = v.String(), true
			}
		}
		return true
	})
	return k, ok
}
