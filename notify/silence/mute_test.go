package silence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestMuteHoldsOnlyUnderItsLease: a row no silence matches is left
// pending; a row one matches is recorded silenced, with the silence's id,
// only by the holder of its lease — a holder whose lease passed to
// another gets ErrLeaseLost and writes nothing.
func TestMuteHoldsOnlyUnderItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	rows, silences := outbox.NewStore(pool), silence.NewStore(pool)
	id := openTicket(t, pool, "k-mute", "login", "sms")
	s, err := silences.Add(ctx, silence.NewSilence{Matchers: []silence.Matcher{{Name: "provider", Op: "=", Value: "sms"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "migration"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := rows.Claim(ctx, "d1", time.Minute, 10)
	if err != nil || len(claimed) != 1 || claimed[0].TicketID != id {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	n := claimed[0]
	if got, err := silences.Mute(ctx, n, review.Labels{Provider: "mailer"}); err != nil || got != 0 {
		t.Fatalf("muted by labels no silence matches: %d, %v", got, err)
	}
	stale := n
	stale.LeasedBy = "d0"
	if got, err := silences.Mute(ctx, stale, review.Labels{Provider: "sms"}); !errors.Is(err, outbox.ErrLeaseLost) || got != 0 {
		t.Fatalf("muted under a lease not held: %d, %v; want ErrLeaseLost", got, err)
	}
	if after, err := rows.Get(ctx, n.ID); err != nil || after.State != outbox.StatePending {
		t.Fatalf("after the refused mutes: %+v, %v; want pending", after, err)
	}
	if got, err := silences.Mute(ctx, n, review.Labels{Provider: "sms"}); err != nil || got != s.ID {
		t.Fatalf("mute: %d, %v; want silence %d", got, err, s.ID)
	}
	after, err := rows.Get(ctx, n.ID)
	if err != nil || after.State != outbox.StateSilenced || after.SilenceID != s.ID || after.LeasedBy != "" {
		t.Fatalf("after the mute: %+v, %v; want silenced by %d, no lease", after, err, s.ID)
	}
	held, err := silences.Get(ctx, s.ID)
	if err != nil || held.HeldRows != 1 || held.HeldTickets != 1 {
		t.Errorf("silence after the mute: %+v, %v; want 1 row of 1 ticket", held, err)
	}
}
