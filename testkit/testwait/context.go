package testwait

import (
	"context"
	"testing"
)

// CancelWhen returns a context of the test that is cancelled once signal
// is closed or sends: when the test has seen what it waited for (a fake
// reached by the request, an adapter started), not after a guessed time a
// loaded machine may outlast. The context ends with the test at the latest.
func CancelWhen(t testing.TB, signal <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		defer cancel()
		select {
		case <-signal:
		case <-ctx.Done():
		}
	}()
	return ctx
}

// DeadlineWhen returns a context of the test whose deadline passes once
// signal is closed or sends — at the moment the test chooses: its Done
// closes and its Err is [context.DeadlineExceeded], as a deadline's do.
// It reports no deadline in advance (Deadline's ok is false), so a
// context derived from it keeps its own timeout and ends when this one
// does. Its deadline passes with the end of the test at the latest.
func DeadlineWhen(t testing.TB, signal <-chan struct{}) context.Context {
	ctx := &signalDeadline{Context: t.Context(), done: make(chan struct{})}
	go func() {
		defer close(ctx.done)
		select {
		case <-signal:
		case <-ctx.Context.Done():
		}
	}()
	return ctx
}

// signalDeadline is DeadlineWhen's context: the test's values, and a
// Done of its own.
type signalDeadline struct {
	context.Context
	done chan struct{}
}

func (c *signalDeadline) Done() <-chan struct{} { return c.done }

func (c *signalDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
