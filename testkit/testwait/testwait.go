// Package testwait is how tests wait for something to happen: they poll a
// condition, never sleep a guessed time, and fail naming what they waited
// for and how long; and a context they hand to the code under test ends
// when the test has seen what it waited for (CancelWhen, DeadlineWhen),
// not after a time a loaded machine may outlast.
package testwait

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// The first poll is immediate; the interval then doubles from
// firstInterval up to maxInterval, so a condition met at once costs
// nothing and a long wait does not load the database or a fake.
const (
	firstInterval = 5 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// errNotYet is what Until tells UntilNil while its condition is unmet.
var errNotYet = errors.New("condition not met")

// Until calls cond until it returns true. Once timeout has passed without,
// it fails the test (t.Fatal) with what and the time waited. cond runs on
// the test's goroutine: it may itself fail the test to stop the wait at
// once (say, when the process it waits on has exited).
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	UntilNil(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// UntilNil is Until for a condition that says why it is not met yet: cond
// returns nil when it is, and the failure carries its last error.
func UntilNil(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	start := time.Now()
	interval := firstInterval
	for {
		err := cond()
		if err == nil {
			return
		}
		waited := time.Since(start)
		if waited >= timeout {
			msg := fmt.Sprintf("%s: not within %s (waited %s)", what, timeout, waited.Round(time.Millisecond))
			if err != errNotYet {
				msg += ": " + err.Error()
			}
			t.Fatal(msg)
			return // a testing.TB whose Fatalf returns
		}
		time.Sleep(min(interval, timeout-waited))
		interval = min(2*interval, maxInterval)
	}
}
