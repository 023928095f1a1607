package slack_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// TestGroupWaitSkipsWhatSettledItself: a ticket's first alert waits
// GroupWait; a ticket resolved by then is never posted, and its rows are
// skipped with the reason, not deleted; one still open is posted after
// the wait; a row whose post may have happened is never skipped.
func TestGroupWaitSkipsWhatSettledItself(t *testing.T) {
	const wait = 400 * time.Millisecond
	for _, tc := range []struct {
		desc      string
		resolve   bool
		uncertain bool
		wantPosts int
		wantState string
	}{
		{desc: "resolved within the wait: never posted", resolve: true, wantState: outbox.StateSkipped},
		{desc: "open after the wait: posted", wantPosts: 1, wantState: outbox.StateSent},
		{desc: "resolved after an uncertain post: found, not skipped, the resolution replied", resolve: true, uncertain: true,
			wantPosts: 2, wantState: outbox.StateSent},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := setup(t)
			d := b.dispatcher(t, "d1", func(c *slack.Config) { c.GroupWait = wait })
			id := b.openTicket(t, "onboarding")
			if st := b.drain(t, d); st.Claimed != 0 {
				t.Fatalf("claimed %+v before the wait", st)
			}
			time.Sleep(wait) // the group wait passes: the scenario
			if tc.uncertain {
				b.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
				if st, err := d.DispatchOnce(b.ctx); err != nil || st.Uncertain != 1 {
					t.Fatalf("uncertain post: %+v, %v", st, err)
				}
			}
			if tc.resolve {
				_, err := review.NewStore(b.pool, ledger.Native(), testPolicy).Resolve(b.ctx, review.Resolution{TicketID: id,
					Outcome: review.ResolutionDone, By: "sweeper", ProviderRecordID: "rec-1"})
				if err != nil {
					t.Fatal(err)
				}
			}
			st := b.drain(t, d)
			if got := len(b.fake.Calls("chat.postMessage")); got != tc.wantPosts {
				t.Errorf("%d posts, want %d (stats %+v)", got, tc.wantPosts, st)
			}
			n := b.row(t, openedKey(id))
			if n.State != tc.wantState {
				t.Fatalf("opened row %s, want %s", n.State, tc.wantState)
			}
			if tc.wantState == outbox.StateSkipped {
				if n.ErrorCode != outbox.CodeSettledBeforeAlert || st.Skipped != 2 {
					t.Errorf("skipped with code %q, stats %+v; want %s, both rows", n.ErrorCode, st, outbox.CodeSettledBeforeAlert)
				}
				if r := b.row(t, "ticket:"+itoa(id)+":resolved"); r.State != outbox.StateSkipped {
					t.Errorf("the resolution's row is %s, want skipped", r.State)
				}
				counts, err := b.outbox.Counts(b.ctx)
				if err != nil || counts[outbox.StateSkipped] != 2 {
					t.Errorf("counts %v, %v", counts, err)
				}
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
