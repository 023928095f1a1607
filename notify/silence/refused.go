package silence

import (
	"errors"
	"strings"
)

// ErrInvalid: a silence to add, or its matchers, are refused; the error
// is a *[RefusedError], which says why.
var ErrInvalid = errors.New("invalid silence")

// RefusedError is a silence refused for what was asked: every problem,
// one each, and whether force would add it anyway. It matches
// [ErrInvalid], and [ErrMatchesNothing] or [ErrHoldsEverything] when that
// is the refusal; its text is "invalid silence: " and the problems, one a
// line.
type RefusedError struct {
	// Problems say what is wrong, each in a sentence of its own.
	Problems []string
	// Forcible: only force overrides the refusal — the silence matches
	// nothing known, or would hold every ticket.
	Forcible bool
	// reason is ErrMatchesNothing or ErrHoldsEverything when Forcible.
	reason error
}

func (e *RefusedError) Error() string {
	return ErrInvalid.Error() + ": " + strings.Join(e.Problems, "\n")
}

// Is matches [ErrInvalid], and the forcible refusal's reason.
func (e *RefusedError) Is(target error) bool {
	return target == ErrInvalid || e.reason != nil && target == e.reason
}

// refused is a *RefusedError of errs, or nil when there are none.
func refused(errs ...error) error {
	var problems []string
	for _, err := range errs {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &RefusedError{Problems: problems}
}

// forcible is the refusal reason, which force overrides, saying why.
func forcible(reason error, why string) *RefusedError {
	return &RefusedError{Problems: []string{why}, Forcible: true, reason: reason}
}
