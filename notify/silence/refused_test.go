package silence_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestRefusalsAreTyped: a refusal is a *RefusedError whose Problems are
// each problem alone — what the review page lists, with no text to split
// — forcible only when force would add the silence, and whose text is
// "invalid silence: " and the problems, one a line.
func TestRefusalsAreTyped(t *testing.T) {
	ctx := context.Background()
	s := silence.NewStore(dbtest.Tx(t))
	known := silence.Known{Providers: []string{"sms", "email"}}
	for _, tc := range []struct {
		desc     string
		req      silence.Request
		problems []string // each problem's start
		forcible error
	}{
		{"two problems", silence.Request{Matchers: []string{"provider=sms"}, End: "2h", By: "alice"},
			[]string{"author \"alice\"", "a comment is required"}, nil},
		{"matches nothing known", silence.Request{Matchers: []string{"provider=smss"}, End: "2h", By: "U0OPS", Comment: "x"},
			[]string{"it matches no open ticket"}, silence.ErrMatchesNothing},
		{"holds everything", silence.Request{Matchers: []string{"provider=~.+"}, End: "2h", By: "U0OPS", Comment: "x"},
			[]string{"it would hold"}, silence.ErrHoldsEverything},
	} {
		_, _, err := s.Request(ctx, tc.req, known, time.Now())
		refused, ok := errors.AsType[*silence.RefusedError](err)
		if !ok {
			t.Errorf("%s: %v; want a *RefusedError", tc.desc, err)
			continue
		}
		if len(refused.Problems) != len(tc.problems) || refused.Forcible != (tc.forcible != nil) {
			t.Errorf("%s: problems %q, forcible %v; want %d problems, forcible %v", tc.desc, refused.Problems, refused.Forcible,
				len(tc.problems), tc.forcible != nil)
			continue
		}
		for i, p := range tc.problems {
			if !strings.HasPrefix(refused.Problems[i], p) {
				t.Errorf("%s: problem %d = %q, want it to start %q", tc.desc, i, refused.Problems[i], p)
			}
		}
		if want := "invalid silence: " + strings.Join(refused.Problems, "\n"); err.Error() != want {
			t.Errorf("%s: text %q, want %q", tc.desc, err.Error(), want)
		}
		for _, sentinel := range []error{silence.ErrMatchesNothing, silence.ErrHoldsEverything} {
			if errors.Is(err, sentinel) != (sentinel == tc.forcible) {
				t.Errorf("%s: errors.Is(%v) = %v", tc.desc, sentinel, !(sentinel == tc.forcible))
			}
		}
		if !errors.Is(err, silence.ErrInvalid) || slices.Contains(refused.Problems, "") {
			t.Errorf("%s: %v; want ErrInvalid and no empty problem", tc.desc, err)
		}
	}
}
