package testwait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDeadlineWhen(t *testing.T) {
	signal := make(chan struct{})
	ctx := DeadlineWhen(t, signal)
	child, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()

	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before the signal = %v, want nil", err)
	}
	if _, ok := ctx.Deadline(); ok {
		t.Error("Deadline reports a time in advance; want none")
	}
	close(signal)
	<-ctx.Done()
	if err := ctx.Err(); err != context.DeadlineExceeded { //nolint:errorlint // exactly a deadline's error
		t.Errorf("Err after the signal = %v, want context.DeadlineExceeded", err)
	}
	<-child.Done()
	if err := child.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a derived context's Err = %v, want context.DeadlineExceeded", err)
	}
}

func TestCancelWhen(t *testing.T) {
	signal := make(chan struct{}, 1)
	ctx := CancelWhen(t, signal)
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before the signal = %v, want nil", err)
	}
	signal <- struct{}{}
	<-ctx.Done()
	if err := ctx.Err(); err != context.Canceled { //nolint:errorlint // exactly a cancellation
		t.Errorf("Err after the signal = %v, want context.Canceled", err)
	}
}

// TestContextsEndWithTheTest: a signal that never comes leaves neither
// context open past its test.
func TestContextsEndWithTheTest(t *testing.T) {
	var deadline, cancelled context.Context
	t.Run("no signal", func(t *testing.T) {
		deadline = DeadlineWhen(t, nil)
		cancelled = CancelWhen(t, nil)
	})
	<-deadline.Done()
	<-cancelled.Done()
}
