package providers

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUnsupported is returned by an adapter whose provider offers no way to
// search: the operation goes to review at once (lookup_unsupported).
var ErrUnsupported = errors.New("provider cannot search for past effects")

// Class says what a lookup error means for what happens next.
type Class int

const (
	// ClassTransient: try again later, within the lookup budget. Timeouts,
	// dropped connections, 5xx, and errors nobody classified.
	ClassTransient Class = iota
	// ClassRateLimited: try again after the provider's delay, without
	// counting an attempt.
	ClassRateLimited
	// ClassPermanent: trying again will not help (bad credentials, a
	// rejected query); the operation goes to review now.
	ClassPermanent
	// ClassUnsupported: the provider cannot search at all.
	ClassUnsupported
)

func (c Class) String() string {
	switch c {
	case ClassRateLimited:
		return "rate_limited"
	case ClassPermanent:
		return "permanent"
	case ClassUnsupported:
		return "unsupported"
	}
	return "transient"
}

// Error is a classified lookup error.
type Error struct {
	Class Class
	// RetryAfter is the provider's requested delay, for ClassRateLimited.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Class == ClassRateLimited {
		return fmt.Sprintf("rate limited (retry after %s): %v", e.RetryAfter, e.Err)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Transient marks err as worth retrying.
func Transient(err error) error { return &Error{Class: ClassTransient, Err: err} }

// Permanent marks err as not worth retrying.
func Permanent(err error) error { return &Error{Class: ClassPermanent, Err: err} }

// RateLimited marks err as the provider asking to wait d.
func RateLimited(d time.Duration, err error) error {
	return &Error{Class: ClassRateLimited, RetryAfter: d, Err: err}
}

// Classify returns an error's class and, when rate limited, its delay. An
// unclassified error is transient: when unsure, look again later — the
// budget bounds it, and it can never become "not found".
func Classify(err error) (Class, time.Duration) {
	if errors.Is(err, ErrUnsupported) {
		return ClassUnsupported, 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class, e.RetryAfter
	}
	return ClassTransient, 0
}

// Redact returns err with every occurrence of values — a credential, a
// recipient — in its message replaced by "[redacted]", keeping its class
// and its chain for errors.Is. Values shorter than four characters are left
// alone (they would blank out ordinary words). When no value occurs, err is
// returned as it is.
func Redact(err error, values ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, v := range values {
		if len(v) >= 4 && strings.Contains(msg, v) {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
