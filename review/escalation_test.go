package review_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/review"
)

func TestEscalationNext(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Second)
	two := review.Escalation{
		Levels: []review.EscalationLevel{
			{Owner: "U0SECOND", Priority: "high", Window: 4 * time.Hour},
			{Owner: "U0ONCALL", Priority: "urgent", Window: 8 * time.Hour},
		},
		RepeatEvery: 2 * time.Hour,
		FirstWindow: 24 * time.Hour,
		MaxRepeats:  2,
	}
	defaultRepeat := two
	defaultRepeat.RepeatEvery = 0
	none := review.Escalation{FirstWindow: 24 * time.Hour, MaxRepeats: 3}
	noRepeats := two
	noRepeats.MaxRepeats = 0

	first := review.EscalationState{Level: 0, Owner: "U0FIRST", Priority: "normal", Deadline: past}
	second := review.EscalationState{Level: 1, Owner: "U0SECOND", Priority: "high", Deadline: past}
	top := review.EscalationState{Level: 2, Owner: "U0ONCALL", Priority: "urgent", Deadline: past}
	with := func(s review.EscalationState, f func(*review.EscalationState)) review.EscalationState {
		f(&s)
		return s
	}

	tests := []struct {
		desc   string
		policy review.Escalation
		state  review.EscalationState
		want   review.EscalationStep
	}{
		{
			desc: "deadline not reached: nothing", policy: two,
			state: with(first, func(s *review.EscalationState) { s.Deadline = future }),
			want:  review.EscalationStep{Kind: review.EscalationNone},
		},
		{
			desc: "deadline exactly now: due", policy: two,
			state: with(first, func(s *review.EscalationState) { s.Deadline = now }),
			want: review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: 0, ToLevel: 1,
				Owner: "U0SECOND", Priority: "high", Deadline: now.Add(4 * time.Hour)},
		},
		{
			desc: "level 0 to level 1: its owner, priority and window", policy: two, state: first,
			want: review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: 0, ToLevel: 1,
				Owner: "U0SECOND", Priority: "high", Deadline: now.Add(4 * time.Hour)},
		},
		{
			desc: "level 1 to level 2 (the last)", policy: two, state: second,
			want: review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: 1, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: now.Add(8 * time.Hour)},
		},
		{
			desc: "acknowledged below the top: still escalates", policy: two,
			state: with(second, func(s *review.EscalationState) { s.Acknowledged = true }),
			want: review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: 1, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: now.Add(8 * time.Hour)},
		},
		{
			desc: "top level: first repeat, every repeat_every", policy: two, state: top,
			want: review.EscalationStep{Kind: review.EscalationRepeat, FromLevel: 2, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1},
		},
		{
			desc: "top level: last repeat within the cap", policy: two,
			state: with(top, func(s *review.EscalationState) { s.RepeatCount = 1 }),
			want: review.EscalationStep{Kind: review.EscalationRepeat, FromLevel: 2, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 2},
		},
		{
			desc: "past the cap: exhausted, deadline left as it passed", policy: two,
			state: with(top, func(s *review.EscalationState) { s.RepeatCount = 2 }),
			want: review.EscalationStep{Kind: review.EscalationExhausted, FromLevel: 2, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: past, RepeatCount: 2, Exhausted: true},
		},
		{
			desc: "exhausted: nothing more, however late", policy: two,
			state: with(top, func(s *review.EscalationState) {
				s.RepeatCount, s.Exhausted, s.Deadline = 2, true, now.Add(-1000*time.Hour)
			}),
			want: review.EscalationStep{Kind: review.EscalationNone},
		},
		{
			desc: "max_repeats 0: exhausted right after the last level", policy: noRepeats, state: top,
			want: review.EscalationStep{Kind: review.EscalationExhausted, FromLevel: 2, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: past, Exhausted: true},
		},
		{
			desc: "acknowledged at the top: held, no repeat, deadline moves on", policy: two,
			state: with(top, func(s *review.EscalationState) { s.Acknowledged, s.RepeatCount = true, 1 }),
			want: review.EscalationStep{Kind: review.EscalationHeld, FromLevel: 2, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1},
		},
		{
			desc: "acknowledged at the top past the cap: held, not exhausted", policy: two,
			state: with(top, func(s *review.EscalationState) { s.Acknowledged, s.RepeatCount = true, 2 }),
			want: review.EscalationStep{Kind: review.EscalationHeld, FromLevel: 2, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 2},
		},
		{
			desc: "repeat_every unset: the last level's window", policy: defaultRepeat, state: top,
			want: review.EscalationStep{Kind: review.EscalationRepeat, FromLevel: 2, ToLevel: 2,
				Owner: "U0ONCALL", Priority: "urgent", Deadline: now.Add(8 * time.Hour), RepeatCount: 1},
		},
		{
			desc: "no levels: re-alerts its owner every review.window", policy: none, state: first,
			want: review.EscalationStep{Kind: review.EscalationRepeat, FromLevel: 0, ToLevel: 0,
				Owner: "U0FIRST", Priority: "normal", Deadline: now.Add(24 * time.Hour), RepeatCount: 1},
		},
		{
			desc: "no levels, past the cap: exhausted", policy: none,
			state: with(first, func(s *review.EscalationState) { s.RepeatCount = 3 }),
			want: review.EscalationStep{Kind: review.EscalationExhausted, FromLevel: 0, ToLevel: 0,
				Owner: "U0FIRST", Priority: "normal", Deadline: past, RepeatCount: 3, Exhausted: true},
		},
		{
			desc: "no levels, acknowledged: held", policy: none,
			state: with(first, func(s *review.EscalationState) { s.Acknowledged = true }),
			want: review.EscalationStep{Kind: review.EscalationHeld, FromLevel: 0, ToLevel: 0,
				Owner: "U0FIRST", Priority: "normal", Deadline: now.Add(24 * time.Hour)},
		},
		{
			desc: "level above the top (levels removed from the config): repeats where it is", policy: two,
			state: review.EscalationState{Level: 4, Owner: "U0GONE", Priority: "urgent", Deadline: past},
			want: review.EscalationStep{Kind: review.EscalationRepeat, FromLevel: 4, ToLevel: 4,
				Owner: "U0GONE", Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1},
		},
		{
			desc: "zero intervals everywhere: repeats at least a minute apart", policy: review.Escalation{MaxRepeats: 1},
			state: first,
			want: review.EscalationStep{Kind: review.EscalationRepeat, FromLevel: 0, ToLevel: 0,
				Owner: "U0FIRST", Priority: "normal", Deadline: now.Add(time.Minute), RepeatCount: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got := tt.policy.Next(tt.state, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
			// Pure: the same question gets the same answer.
			if again := tt.policy.Next(tt.state, now); again != got {
				t.Errorf("second call gave %+v", again)
			}
		})
	}
}

// TestEscalationWalk follows one ticket through the whole policy, as the
// escalation job would at each deadline, and checks that every step but
// the last is taken once and then nothing follows.
func TestEscalationWalk(t *testing.T) {
	t.Parallel()
	policy := review.Escalation{
		Levels: []review.EscalationLevel{
			{Owner: "U0SECOND", Priority: "high", Window: 4 * time.Hour},
			{Owner: "U0ONCALL", Priority: "urgent", Window: 8 * time.Hour},
		},
		RepeatEvery: 2 * time.Hour,
		MaxRepeats:  3,
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	state := review.EscalationState{Owner: "U0FIRST", Priority: "normal", Deadline: now.Add(24 * time.Hour)}
	var keys []string
	for range 20 {
		now = state.Deadline.Add(time.Minute)
		step := policy.Next(state, now)
		if step.Kind == review.EscalationNone {
			break
		}
		keys = append(keys, step.DedupeKey(7))
		state.Level, state.Owner, state.Priority = step.ToLevel, step.Owner, step.Priority
		state.Deadline, state.RepeatCount, state.Exhausted = step.Deadline, step.RepeatCount, step.Exhausted
	}
	want := []string{
		"ticket:7:escalated:1", "ticket:7:escalated:2",
		"ticket:7:repeat:2:1", "ticket:7:repeat:2:2", "ticket:7:repeat:2:3",
		"ticket:7:exhausted",
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if !state.Exhausted || state.Level != 2 || state.Owner != "U0ONCALL" {
		t.Errorf("final state %+v, want exhausted at level 2 with the on-call owner", state)
	}
}

func TestEscalationStepAlerts(t *testing.T) {
	t.Parallel()
	for kind, want := range map[review.EscalationKind]bool{
		review.EscalationNone: false, review.EscalationHeld: false,
		review.EscalationLevelUp: true, review.EscalationRepeat: true, review.EscalationExhausted: true,
		review.EscalationAckTimedOut: true,
	} {
		step := review.EscalationStep{Kind: kind}
		if got := step.Alerts(); got != want {
			t.Errorf("%q.Alerts() = %v, want %v", kind, got, want)
		}
		if got := step.DedupeKey(1) != ""; got != want {
			t.Errorf("%q has a dedupe key: %v, want %v", kind, got, want)
		}
	}
}

func TestNextRelookup(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	p := review.Policy{RelookupAfter: time.Minute, RelookupMax: time.Hour}
	for _, tc := range []struct {
		desc   string
		policy review.Policy
		done   int
		want   time.Duration // after now; -1: never
	}{
		{desc: "the first after relookup_after", policy: p, done: 0, want: time.Minute},
		{desc: "then doubling", policy: p, done: 1, want: 2 * time.Minute},
		{desc: "and doubling", policy: p, done: 5, want: 32 * time.Minute},
		{desc: "capped at relookup_max", policy: p, done: 6, want: time.Hour},
		{desc: "capped however many", policy: p, done: 1000, want: time.Hour},
		{desc: "no relookup_after: never", policy: review.Policy{}, done: 0, want: -1},
	} {
		got := tc.policy.NextRelookup(now, tc.done)
		switch {
		case tc.want < 0 && !got.IsZero():
			t.Errorf("%s: NextRelookup = %s, want never", tc.desc, got)
		case tc.want >= 0 && !got.Equal(now.Add(tc.want)):
			t.Errorf("%s: NextRelookup = %s after now, want %s", tc.desc, got.Sub(now), tc.want)
		}
	}
}
