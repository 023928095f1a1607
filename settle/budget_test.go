package settle_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/settle"
)

// TestDownCreditIsCapped: an outage extends an operation's lookup budget
// by its length up to MaxDownCredit and no further, so that an operation
// whose own lookups keep its provider down ends in a ticket rather than
// waiting forever.
func TestDownCreditIsCapped(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ down, want time.Duration }{
		{-time.Second, 0}, // a clock read out of order: no credit
		{0, 0},
		{45 * time.Second, 45 * time.Second},
		{settle.MaxDownCredit, settle.MaxDownCredit},
		{settle.MaxDownCredit + time.Second, settle.MaxDownCredit},
		{30 * 24 * time.Hour, settle.MaxDownCredit},
	} {
		if got := settle.DownCredit(tt.down); got != tt.want {
			t.Errorf("DownCredit(%s) = %s, want %s", tt.down, got, tt.want)
		}
	}
}

// TestBudgetNext is the one rule the River lookup job and `sweep --once`
// follow after each ask: what follows it, and what it spends. Pacing
// never spends or gives up; a rate-limited ask spends budget but no
// attempt and records no error; a transient one spends an attempt; the
// budget leaves out an outage up to MaxDownCredit, and MaxAttempts ends
// the retries of a budget that would allow more.
func TestBudgetNext(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	q := providers.Query{OpKey: "k"}
	step := func(class providers.Class, retryAfter time.Duration) settle.Step {
		return settle.Step{Query: &q, Adapter: "http", Class: class, RetryAfter: retryAfter, Err: fmt.Errorf("%s answer", class)}
	}
	answered := settle.Step{Final: true, Query: &q, Adapter: "http", Outcome: proof.Answered(q, nil)}
	permanent := step(providers.ClassPermanent, 0)
	permanent.Final, permanent.Outcome = true, proof.Failed("permanent error: HTTP 401")
	startedAt := func(ago, down time.Duration) *settle.Asked { return &settle.Asked{At: now.Add(-ago), Down: down} }
	history := func(n int) []proof.AttemptError {
		var errs []proof.AttemptError
		for i := range n {
			errs = append(errs, proof.AttemptError{At: now.Add(-time.Hour), Attempt: i + 1, Class: "transient", Error: "old"})
		}
		return errs
	}

	for _, tc := range []struct {
		desc   string
		budget time.Duration
		down   time.Duration // the provider's downtime in all, now
		tries  settle.Tries
		step   settle.Step
		// want is what follows; for a wait, within [waitMin, waitMax].
		want             settle.ActionKind
		waitMin, waitMax time.Duration
		// wantDetail, for a lookup given up, begins its lookup_failed detail.
		wantDetail string
		// wantTries is what the ask leaves: attempts, the budget's start,
		// and the classes and attempt numbers of the errors recorded.
		wantAttempts int
		wantFirst    *settle.Asked
		wantErrors   []string
	}{
		{desc: "an answer settles, nothing recorded", budget: time.Minute, step: answered,
			want: settle.ActionSettle},
		{desc: "a permanent error settles, recorded as the next attempt", budget: time.Minute,
			tries: settle.Tries{Attempts: 2, FirstAsked: startedAt(5*time.Second, 0), Errors: history(2)}, step: permanent,
			want: settle.ActionSettle, wantAttempts: 2, wantFirst: startedAt(5*time.Second, 0),
			wantErrors: []string{"1 transient", "2 transient", "3 permanent"}},
		{desc: "paced: asked again after the delay, the budget not started", budget: time.Minute,
			step: step(providers.ClassPaced, 7*time.Second),
			want: settle.ActionPace, waitMin: 7 * time.Second, waitMax: 7 * time.Second},
		{desc: "paced with no delay: a second, never a spin", budget: time.Minute,
			step: step(providers.ClassPaced, 0),
			want: settle.ActionPace, waitMin: time.Second, waitMax: time.Second},
		{desc: "paced long past the budget: still no ticket", budget: time.Minute,
			tries: settle.Tries{Attempts: 3, FirstAsked: startedAt(time.Hour, 0)}, step: step(providers.ClassPaced, time.Second),
			want: settle.ActionPace, waitMin: time.Second, waitMax: time.Second, wantAttempts: 3, wantFirst: startedAt(time.Hour, 0)},
		{desc: "rate-limited, first ask: the budget starts, no attempt, no error", budget: time.Minute, down: 5 * time.Second,
			step: step(providers.ClassRateLimited, 10*time.Second),
			want: settle.ActionAskAgain, waitMin: 10 * time.Second, waitMax: 10 * time.Second, wantFirst: startedAt(time.Second, 5*time.Second)},
		{desc: "rate-limited past the budget: given up", budget: time.Minute,
			tries: settle.Tries{Attempts: 1, FirstAsked: startedAt(55*time.Second, 0), Errors: history(1)}, step: step(providers.ClassRateLimited, 10*time.Second),
			want: settle.ActionSettle, wantDetail: "2 attempt(s) failed within lookup_budget 1m0s; last: rate_limited answer",
			wantAttempts: 1, wantFirst: startedAt(55*time.Second, 0), wantErrors: []string{"1 transient", "2 rate_limited"}},
		{desc: "transient, first ask: an attempt, backed off", budget: time.Minute,
			step: step(providers.ClassTransient, 0),
			want: settle.ActionAskAgain, waitMin: 800 * time.Millisecond, waitMax: 1200 * time.Millisecond,
			wantAttempts: 1, wantFirst: startedAt(time.Second, 0), wantErrors: []string{"1 transient"}},
		{desc: "transient, the backoff past the budget: given up", budget: time.Minute,
			tries: settle.Tries{Attempts: 3, FirstAsked: startedAt(55*time.Second, 0), Errors: history(3)}, step: step(providers.ClassTransient, 0),
			want: settle.ActionSettle, wantDetail: "4 attempt(s) failed within lookup_budget 1m0s; last: transient answer",
			wantAttempts: 3, wantFirst: startedAt(55*time.Second, 0), wantErrors: []string{"1 transient", "2 transient", "3 transient", "4 transient"}},
		{desc: "transient at the attempt cap, budget to spare: given up", budget: 1000 * time.Hour,
			tries: settle.Tries{Attempts: settle.MaxAttempts - 1, FirstAsked: startedAt(time.Hour, 0), Errors: history(2)}, step: step(providers.ClassTransient, 0),
			want: settle.ActionSettle, wantDetail: fmt.Sprintf("%d attempt(s) failed within lookup_budget 1000h0m0s", settle.MaxAttempts),
			wantAttempts: settle.MaxAttempts - 1, wantFirst: startedAt(time.Hour, 0),
			wantErrors: []string{"1 transient", "2 transient", fmt.Sprintf("%d transient", settle.MaxAttempts)}},
		{desc: "an outage since the first ask extends the budget", budget: time.Minute, down: 50 * time.Second,
			tries: settle.Tries{Attempts: 2, FirstAsked: startedAt(90*time.Second, 10*time.Second)}, step: step(providers.ClassRateLimited, 5*time.Second),
			want: settle.ActionAskAgain, waitMin: 5 * time.Second, waitMax: 5 * time.Second,
			wantAttempts: 2, wantFirst: startedAt(90*time.Second, 10*time.Second)},
		{desc: "an outage extends it by MaxDownCredit at most", budget: time.Minute, down: 5 * time.Hour,
			tries: settle.Tries{Attempts: 2, FirstAsked: startedAt(settle.MaxDownCredit+90*time.Second, 0)}, step: step(providers.ClassRateLimited, 5*time.Second),
			want: settle.ActionSettle, wantDetail: "3 attempt(s) failed within lookup_budget 1m0s",
			wantAttempts: 2, wantFirst: startedAt(settle.MaxDownCredit+90*time.Second, 0), wantErrors: []string{"3 rate_limited"}},
		{desc: "the history keeps the latest twenty", budget: time.Hour,
			tries: settle.Tries{Attempts: 20, FirstAsked: startedAt(time.Minute, 0), Errors: history(20)}, step: step(providers.ClassTransient, 0),
			want: settle.ActionAskAgain, waitMin: 48 * time.Second, waitMax: 72 * time.Second,
			wantAttempts: 21, wantFirst: startedAt(time.Minute, 0), wantErrors: append(numbered(2, 20), "21 transient")},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			budget := settle.Budget{Length: tc.budget, DownTotal: func() time.Duration { return tc.down }}
			tries := tc.tries
			got := budget.Next(tc.step, &tries, now.Add(-time.Second), now)
			if got.Kind != tc.want {
				t.Fatalf("Next: %+v, want kind %d", got, tc.want)
			}
			switch tc.want {
			case settle.ActionSettle:
				op := opOf("k", "http", now, time.Hour)
				d := proof.Decide(op, got.Step.Outcome)
				switch own := proof.Decide(op, tc.step.Outcome); {
				case tc.wantDetail != "" && (d.Reason != proof.ReasonLookupFailed || !strings.HasPrefix(d.Detail, tc.wantDetail)):
					t.Errorf("decided %s %q, want lookup_failed %q…", d.Reason, d.Detail, tc.wantDetail)
				case tc.wantDetail == "" && (d.Reason != own.Reason || d.Detail != own.Detail):
					t.Errorf("decided %s %q, want the answer's own %s %q", d.Reason, d.Detail, own.Reason, own.Detail)
				}
			default:
				if got.Wait < tc.waitMin || got.Wait > tc.waitMax {
					t.Errorf("wait %s, want within [%s, %s]", got.Wait, tc.waitMin, tc.waitMax)
				}
			}
			if tries.Attempts != tc.wantAttempts {
				t.Errorf("attempts %d, want %d", tries.Attempts, tc.wantAttempts)
			}
			if (tries.FirstAsked == nil) != (tc.wantFirst == nil) || tries.FirstAsked != nil && *tries.FirstAsked != *tc.wantFirst {
				t.Errorf("budget started %+v, want %+v", tries.FirstAsked, tc.wantFirst)
			}
			var recorded []string
			for _, e := range tries.Errors {
				if e.At.Equal(now) || e.Error == "old" {
					recorded = append(recorded, fmt.Sprintf("%d %s", e.Attempt, e.Class))
				}
			}
			if want := tc.wantErrors; strings.Join(recorded, ",") != strings.Join(want, ",") {
				t.Errorf("errors %q, want %q", recorded, want)
			}
		})
	}
}

// numbered is "n transient" for n from first to last.
func numbered(first, last int) []string {
	var out []string
	for n := first; n <= last; n++ {
		out = append(out, fmt.Sprintf("%d transient", n))
	}
	return out
}
