package logs

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultHold is how long [Outage] holds a line back for a probe's answer
// before it writes the line as it is.
const DefaultHold = 2 * time.Second

// maxHeld bounds the lines held back at once: past it, lines pass as they
// are.
const maxHeld = 1000

// Outage quiets, while the database is known unreachable, the warnings
// and errors of a part that does nothing but talk to the database —
// River's client, whose fetch loops, leader election, notifier and
// maintenance services each fail again and again, each in its own words,
// while the database restarts. The daemon's own probe says the outage
// once ([Outage.Set]); the part's lines during it are written at DEBUG.
//
// A WARN or ERROR line that comes while the database is thought
// reachable may be the outage's first sign: it is held back, the probe is
// asked to look at once ([Outage.Asks]), and the line is written lowered
// to DEBUG if the probe's answer is "unreachable", as it is when the
// answer is "reachable", or after [DefaultHold] without an answer. Only a
// probe begun after the line came answers for it. Lines below WARN always
// pass at once. Safe for concurrent use.
type Outage struct {
	hold  time.Duration
	now   func() time.Time
	after func(time.Duration, func())
	asks  chan struct{}

	mu      sync.Mutex
	down    bool
	held    []heldLine
	waiting bool // a timer for the held lines is set
}

// heldLine is a line held back for the probe's answer, with the handler it
// goes to.
type heldLine struct {
	next slog.Handler
	ctx  context.Context
	r    slog.Record
	at   time.Time // when it was held
}

// NewOutage returns an Outage that holds lines back for hold at most
// (DefaultHold when not positive), the database thought reachable.
func NewOutage(hold time.Duration) *Outage {
	return newOutage(hold, time.Now, func(d time.Duration, f func()) { time.AfterFunc(d, f) })
}

// newOutage is NewOutage with the clock and the timer given: after runs f
// once d has passed.
func newOutage(hold time.Duration, now func() time.Time, after func(time.Duration, func())) *Outage {
	if hold <= 0 {
		hold = DefaultHold
	}
	return &Outage{hold: hold, now: now, after: after, asks: make(chan struct{}, 1)}
}

// Asks receives when a held line asks the probe to look now.
func (o *Outage) Asks() <-chan struct{} { return o.asks }

// Set records the answer of a probe begun at begun: reachable or not.
// Unreachable, the lines held back are written lowered to DEBUG, and so
// are the lines to come until a probe finds the database again; first is
// then the time of the oldest line held, the outage's first sign (zero
// when none was held). Reachable, the lines held back since before begun
// are written as they are.
func (o *Outage) Set(reachable bool, begun time.Time) (first time.Time) {
	o.mu.Lock()
	o.down = !reachable
	var out, keep []heldLine
	for _, l := range o.held {
		if !reachable || l.at.Before(begun) {
			out = append(out, l)
		} else {
			keep = append(keep, l)
		}
	}
	o.held = keep
	o.mu.Unlock()
	if len(out) > 0 {
		first = out[0].at
	}
	for _, l := range out {
		write(l, !reachable)
	}
	return first
}

// Down reports whether the last probe found the database unreachable.
func (o *Outage) Down() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

// expire writes the lines that waited their hold out with no answer, as
// they are.
func (o *Outage) expire() {
	o.mu.Lock()
	cut := o.now().Add(-o.hold)
	var out, keep []heldLine
	for _, l := range o.held {
		if !l.at.After(cut) {
			out = append(out, l)
		} else {
			keep = append(keep, l)
		}
	}
	o.held = keep
	o.waiting = len(keep) > 0
	if o.waiting {
		o.after(keep[0].at.Add(o.hold).Sub(o.now()), o.expire)
	}
	o.mu.Unlock()
	for _, l := range out {
		write(l, false)
	}
}

// write writes l, lowered to DEBUG when lower is set.
func write(l heldLine, lower bool) {
	if lower {
		l.r.Level = slog.LevelDebug
		if !l.next.Enabled(l.ctx, slog.LevelDebug) {
			return
		}
	}
	l.next.Handle(l.ctx, l.r) //nolint:errcheck // a log line has nowhere to report its own failure
}

// Handler returns next behind o: the lines of the part that talks only to
// the database go through it.
func (o *Outage) Handler(next slog.Handler) slog.Handler { return &outageHandler{next: next, o: o} }

type outageHandler struct {
	next slog.Handler
	o    *Outage
}

func (h *outageHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *outageHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	o := h.o
	o.mu.Lock()
	if o.down {
		o.mu.Unlock()
		write(heldLine{next: h.next, ctx: ctx, r: r}, true)
		return nil
	}
	if len(o.held) >= maxHeld {
		o.mu.Unlock()
		return h.next.Handle(ctx, r)
	}
	o.held = append(o.held, heldLine{next: h.next, ctx: context.WithoutCancel(ctx), r: r.Clone(), at: o.now()})
	if !o.waiting {
		o.waiting = true
		o.after(o.hold, o.expire)
	}
	o.mu.Unlock()
	select {
	case o.asks <- struct{}{}:
	default: // the probe is asked already
	}
	return nil
}

func (h *outageHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &outageHandler{next: h.next.WithAttrs(attrs), o: h.o}
}

func (h *outageHandler) WithGroup(name string) slog.Handler {
	return &outageHandler{next: h.next.WithGroup(name), o: h.o}
}
