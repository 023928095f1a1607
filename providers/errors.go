package providers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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
	// ClassPaced: sweeper's own pacing — the provider's rate limit or
	// concurrency cap in this process — held the lookup back; the provider
	// was not asked. Try again after the delay: no attempt, no error
	// recorded, no lookup budget spent.
	ClassPaced
)

func (c Class) String() string {
	switch c {
	case ClassRateLimited:
		return "rate_limited"
	case ClassPermanent:
		return "permanent"
	case ClassUnsupported:
		return "unsupported"
	case ClassPaced:
		return "paced"
	}
	return "transient"
}

// Error is a classified lookup error.
type Error struct {
	Class Class
	// RetryAfter is the provider's requested delay, for ClassRateLimited,
	// or sweeper's own, for ClassPaced.
	RetryAfter time.Duration
	// Until, when set, is when the provider says it answers anyone again
	// (see [OutUntil]).
	Until time.Time
	Err   error
}

func (e *Error) Error() string {
	switch e.Class {
	case ClassRateLimited:
		return fmt.Sprintf("rate limited (retry after %s): %v", e.RetryAfter, e.Err)
	case ClassPaced:
		return fmt.Sprintf("paced (ask again after %s): %v", e.RetryAfter, e.Err)
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

// OutUntil marks err as the provider refusing every request until until
// — a quota of the day spent (Xero's 5,000 calls), not one operation's
// rate limit: the provider's outage. For the operation it is a transient
// error; the provider's health, when it can ([DownUntil]), takes the
// provider down for the cluster at once and asks it nothing before until.
func OutUntil(until time.Time, err error) error {
	return &Error{Class: ClassTransient, Until: until, Err: err}
}

// OutUntilOf returns when the provider said it answers again, for an
// error marked by [OutUntil].
func OutUntilOf(err error) (time.Time, bool) {
	var e *Error
	if errors.As(err, &e) && !e.Until.IsZero() {
		return e.Until, true
	}
	return time.Time{}, false
}

// DownUntil is a provider's [Health] that can take the provider down at
// once, for everyone, until a time the provider gave ([OutUntil]); health's
// Tracker implements it.
type DownUntil interface {
	// DownUntil takes the provider down, its next probe not before until
	// (a later probe already set stands). detail says why, for people.
	DownUntil(ctx context.Context, until time.Time, detail string) error
}

// Paced marks a lookup sweeper held back itself, to be tried after d.
func Paced(d time.Duration, err error) error {
	return &Error{Class: ClassPaced, RetryAfter: d, Err: err}
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

// Redact returns err with every form of values — a credential, a
// recipient — in its message replaced by "[redacted]", keeping its class
// and its chain for errors.Is. A value is found in any letter case (ASCII
// and Unicode simple folding: JANE.DOE@EXAMPLE.COM for Jane.Doe@Example.com)
// and URL-escaped (jane.doe%40example.com). A value that looks like a phone
// number (at least seven digits among +, spaces, brackets, dots, dashes and
// slashes, after an optional channel prefix such as "whatsapp:") is also
// found however its digits are grouped: every run of digits and separators
// in the message whose digits hold the number's last seven (its national
// part, enough to identify it) is redacted — "+1(555)0100-777",
// "15550100777", "555-0100-777" for "+1 (555) 0100-777". That may redact
// an unrelated number holding those digits too; the recipient shows in no
// form.
//
// Values shorter than four characters are left alone (they would blank out
// ordinary words). When nothing is redacted, err is returned as it is.
func Redact(err error, values ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := RedactText(msg, values...)
	if out == msg {
		return err
	}
	return &redacted{msg: out, err: err}
}

// RedactText is text with every form of values replaced by "[redacted]",
// as [Redact] does to an error's message.
func RedactText(text string, values ...string) string {
	out := text
	var forms []string
	for _, v := range values {
		if len(v) < 4 {
			continue
		}
		for _, f := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	if len(forms) > 0 {
		// Longest first: at each position the longest form is tried first.
		slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
		out = replaceFold(out, forms, "[redacted]")
	}
	for _, v := range values {
		if national, ok := phoneTail(v); ok {
			out = redactPhone(out, national)
		}
	}
	return out
}

// replaceFold replaces, left to right, every occurrence of one of forms in
// text, compared under Unicode simple case folding as strings.EqualFold
// (and the (?i) of package regexp) compare, with repl; at each position the
// first form that matches wins. It is what a case-insensitive regexp of the
// forms would do, without compiling one per call: redaction runs on every
// evidence text of every operation.
func replaceFold(text string, forms []string, repl string) string {
	runes := make([]int, len(forms)) // each form's length in runes
	for i, f := range forms {
		runes[i] = utf8.RuneCountInString(f)
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(text); {
		matched := false
		for k, f := range forms {
			end, ok := foldPrefix(text[i:], f, runes[k])
			if ok {
				if !changed {
					b.Grow(len(text))
					b.WriteString(text[:i])
					changed = true
				}
				b.WriteString(repl)
				i += end
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		if changed {
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	if !changed {
		return text
	}
	return b.String()
}

// foldPrefix reports whether s starts with n runes that equal f under
// simple case folding, and their length in bytes.
func foldPrefix(s, f string, n int) (int, bool) {
	first, _ := utf8.DecodeRuneInString(f)
	r, _ := utf8.DecodeRuneInString(s)
	if r != first && !sameFold(r, first) {
		return 0, false // the common case, cheaply
	}
	end := 0
	for range n {
		if end >= len(s) {
			return 0, false
		}
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	return end, strings.EqualFold(s[:end], f)
}

// sameFold reports whether r and t are in the same simple case-folding
// orbit.
func sameFold(r, t rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == t {
			return true
		}
	}
	return false
}

// ErrMalformed marks an answer a provider gave that cannot be read as one:
// a batch answer for an op_key that was not asked, say. It is transient —
// asked again, not believed — and, for a whole batch, a reason to ask its
// operations one by one ([Provider.LookupMany]).
var ErrMalformed = errors.New("malformed answer")

// Malformed is err, a provider's answer that cannot be read, as a
// transient error that [errors.Is] ErrMalformed; its text is err's.
func Malformed(err error) error { return Transient(&malformedError{err}) }

type malformedError struct{ err error }

func (e *malformedError) Error() string        { return e.err.Error() }
func (e *malformedError) Unwrap() error        { return e.err }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// phoneSeparators are what may stand between a phone number's digits.
const phoneSeparators = " +-()./\u00a0"

// phoneTail returns the last seven digits of v when v looks like a phone
// number: a "+", digits and separators, at least seven digits, after an
// optional channel prefix of letters and a colon ("whatsapp:").
func phoneTail(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if prefix, rest, ok := strings.Cut(v, ":"); ok && prefix != "" && strings.IndexFunc(prefix, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
		v = rest
	}
	digits := 0
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune(phoneSeparators, r):
		default:
			return "", false
		}
	}
	if digits < 7 {
		return "", false
	}
	d := digitsOf(v)
	return d[len(d)-7:], true
}

func digitsOf(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// phoneRun is a run of digits and separators that starts with a digit, "+"
// or "(" and ends with a digit or ")".
var phoneRun = regexp.MustCompile(`[+(]*[0-9](?:[0-9 +\-()./\x{00a0}]*[0-9])?\)?`)

// redactPhone redacts every run of digits and separators in text whose
// digits hold national.
func redactPhone(text, national string) string {
	return phoneRun.ReplaceAllStringFunc(text, func(run string) string {
		if strings.Contains(digitsOf(run), national) {
			return "[redacted]"
		}
		return run
	})
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
