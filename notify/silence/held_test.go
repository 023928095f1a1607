package silence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestHeldByNamesTheSilenceHoldingEachTicket: each set of labels gets the
// active silence that holds it now, by the rule notifications are held
// by, and 0 when none does, or when its silence has ended or is yet to
// start.
func TestHeldByNamesTheSilenceHoldingEachTicket(t *testing.T) {
	ctx := context.Background()
	s := silence.NewStore(dbtest.Tx(t))
	now := time.Now()
	add := func(start, end time.Time, matchers ...string) int64 {
		t.Helper()
		var ms []silence.Matcher
		for _, m := range matchers {
			p, err := silence.ParseMatcher(m)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, p)
		}
		si, err := s.Add(ctx, silence.NewSilence{Matchers: ms, StartsAt: start, EndsAt: end, CreatedBy: "U0LEAD", Comment: "migration"})
		if err != nil {
			t.Fatal(err)
		}
		return si.ID
	}
	sms := add(time.Time{}, now.Add(time.Hour), "provider=sms")
	login := add(time.Time{}, now.Add(time.Hour), "workflow=~log.*", "escalation_level=2")
	add(now.Add(time.Hour), now.Add(2*time.Hour), "provider=mailer") // not yet
	got, err := s.HeldBy(ctx, []review.Labels{
		{Provider: "sms", Workflow: "billing", Reason: "not_found", Owner: "U0A", EscalationLevel: "0"},
		{Provider: "mailer", Workflow: "login", Reason: "not_found", Owner: "U0A", EscalationLevel: "2"},
		{Provider: "mailer", Workflow: "login", Reason: "not_found", Owner: "U0A", EscalationLevel: "1"},
		{Provider: "mailer", Workflow: "billing", Reason: "not_found", Owner: "U0A", EscalationLevel: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{sms, login, 0, 0}, got); diff != "" {
		t.Errorf("held by (-want +got):\n%s", diff)
	}
	if got, err := s.HeldBy(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("HeldBy(nil) = %v, %v", got, err)
	}
}
