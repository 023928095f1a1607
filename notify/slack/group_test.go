package slack_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// groupRoots returns the alert groups' messages in Slack.
func (b *bundle) groupRoots() []slackfake.Message {
	var roots []slackfake.Message
	for _, m := range b.fake.Messages() {
		if strings.HasPrefix(m.DedupeKey(), "group:") {
			roots = append(roots, m)
		}
	}
	return roots
}

// groupDispatcher groups from 3 tickets, gives each of up to 20 tickets its
// own alert in the group's thread, and edits the group's message after
// every batch (an interval shorter than any batch).
func (b *bundle) groupDispatcher(t *testing.T, id string) *notify.Dispatcher {
	return b.dispatcher(t, id, func(c *slack.Config) {
		c.Composer = slack.TicketComposer{Tickets: c.Tickets}
		c.GroupThreshold = 3
		c.GroupDetailLimit = 20
		c.GroupInterval = time.Nanosecond
	})
}

// TestAlertGroups: tickets of one provider and reason bound for one
// channel are one root message from the threshold on, each ticket's alert
// with its buttons in its thread; fewer are posted alone, as are tickets
// of another channel; the group's message is edited as tickets resolve,
// and their replies go in the group's thread.
func TestAlertGroups(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		tickets   int
		wantRoots int
	}{
		{desc: "below the threshold: one root each", tickets: 2, wantRoots: 2},
		{desc: "at the threshold: one group", tickets: 3, wantRoots: 1},
		{desc: "many: one group", tickets: 12, wantRoots: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := setup(t)
			d := b.groupDispatcher(t, "d1")
			var ids []int64
			for range tc.tickets {
				ids = append(ids, b.openTicket(t, "onboarding"))
			}
			billing := b.openTicket(t, "billing") // another channel
			b.drain(t, d)

			var roots int
			for _, m := range b.fake.Messages() {
				if m.ThreadTS == "" || m.ThreadTS == m.TS { // Slack gives a thread's root its own ts
					roots++
				}
			}
			if roots != tc.wantRoots+1 {
				t.Fatalf("%d root messages, want %d and the billing ticket's", roots, tc.wantRoots)
			}
			if m := b.requireOne(t, openedKey(billing)); m.ThreadTS != "" || m.Channel != billingChannel {
				t.Errorf("billing ticket's alert %+v, want a root in %s", m, billingChannel)
			}
			groups := b.groupRoots()
			if tc.tickets < 3 {
				if len(groups) != 0 {
					t.Errorf("%d group messages below the threshold", len(groups))
				}
				return
			}
			if len(groups) != 1 {
				t.Fatalf("%d group messages, want 1", len(groups))
			}
			g := groups[0]
			if want := fmt.Sprintf("%d review tickets open for `mailer`: no record found.", tc.tickets); !strings.Contains(g.Text, want) ||
				!strings.Contains(string(g.Blocks), fmt.Sprintf("sweeper tickets list --group %d", groupID(t, g))) {
				t.Errorf("group message %q, blocks %s; want %q and how to list them", g.Text, g.Blocks, want)
			}
			for _, id := range ids {
				m := b.requireOne(t, openedKey(id))
				if m.ThreadTS != g.TS || m.Channel != g.Channel || !strings.Contains(string(m.Blocks), message.ActionAck) {
					t.Errorf("ticket %d's alert in %s thread %q, want in the group's thread %s with its buttons", id, m.Channel, m.ThreadTS, g.TS)
				}
			}

			// Two resolve: replies in the group's thread, the ticket's own
			// alert and the group's message edited.
			store := review.NewStore(b.pool, ledger.Native(), testPolicy)
			for _, id := range ids[:2] {
				if _, err := store.Resolve(b.ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent, By: "cli:alice"}); err != nil {
					t.Fatal(err)
				}
			}
			b.drain(t, d)
			for _, id := range ids[:2] {
				reply := b.requireOne(t, fmt.Sprintf("ticket:%d:resolved", id))
				if reply.ThreadTS != g.TS {
					t.Errorf("resolution of ticket %d in thread %q, want the group's %s", id, reply.ThreadTS, g.TS)
				}
				if m := b.fake.WithKey(openedKey(id))[0]; m.Edits != 1 {
					t.Errorf("ticket %d's alert edited %d times, want 1", id, m.Edits)
				}
			}
			g = b.groupRoots()[0]
			if want := fmt.Sprintf("%d review tickets open for `mailer`: no record found (2 more resolved).", tc.tickets-2); !strings.Contains(g.Text, want) {
				t.Errorf("group message after two resolved: %q, want %q", g.Text, want)
			}
		})
	}
}

// TestAlertGroupsTwoDispatchers: dispatchers draining at once, and again,
// make one group and post each alert once.
func TestAlertGroupsTwoDispatchers(t *testing.T) {
	b := setup(t)
	const tickets = 15
	var ids []int64
	for range tickets {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	var wg sync.WaitGroup
	for i := range 3 {
		d := b.dispatcher(t, fmt.Sprintf("d%d", i), func(c *slack.Config) {
			c.Composer = slack.TicketComposer{Tickets: c.Tickets}
			c.GroupThreshold = 3
			c.GroupDetailLimit = 20
			c.BatchSize = 4
		})
		wg.Go(func() {
			for range 3 {
				if _, err := d.Drain(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b.drain(t, b.groupDispatcher(t, "d9"))
	groups := b.groupRoots()
	if len(groups) != 1 {
		t.Fatalf("%d group messages, want 1", len(groups))
	}
	for _, id := range ids {
		if m := b.requireOne(t, openedKey(id)); m.ThreadTS != groups[0].TS {
			t.Errorf("ticket %d's alert in thread %q, want %s", id, m.ThreadTS, groups[0].TS)
		}
	}
	if got := len(b.fake.Calls("chat.postMessage")); got != tickets+1 {
		t.Errorf("%d posts, want %d", got, tickets+1)
	}
}

// TestAlertGroupRemoved: a group message a person deleted before its
// tickets' alerts went in its thread leaves each alert posted once, as a
// root of its own.
func TestAlertGroupRemoved(t *testing.T) {
	b := setup(t)
	d := b.groupDispatcher(t, "d1")
	var ids []int64
	for range 3 {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	for range 2 { // the group is made, then its message posted
		if _, err := d.DispatchOnce(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	groups := b.groupRoots()
	if len(groups) != 1 || len(b.fake.Messages()) != 1 {
		t.Fatalf("%d group messages of %d messages, want the group's alone", len(groups), len(b.fake.Messages()))
	}
	if !b.fake.Delete(groups[0].Channel, groups[0].TS) {
		t.Fatal("could not delete the group's message")
	}
	b.drain(t, d)
	for _, id := range ids {
		if m := b.requireOne(t, openedKey(id)); m.ThreadTS != "" {
			t.Errorf("ticket %d's alert in thread %q, want a root of its own", id, m.ThreadTS)
		}
	}
}

// TestGroupedAlertWaitsForItsGroup: a ticket's alert that a claim returns
// already in an alert group whose message is not posted yet — another
// dispatcher's decision committed while the claim ran — is given back to
// wait for that message, never posted alone ahead of it.
func TestGroupedAlertWaitsForItsGroup(t *testing.T) {
	b := setup(t)
	var ids []int64
	for range 4 {
		ids = append(ids, b.openTicket(t, "onboarding"))
	}
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Composer = slack.TicketComposer{Tickets: c.Tickets}
		c.GroupThreshold = 3
	})
	// The group is made; its message is rate limited, and waits.
	b.fake.Inject("chat.postMessage", slackfake.Fault{Status: 429, RetryAfter: "60"})
	b.drain(t, d)
	var row, group int64
	if err := b.pool.QueryRow(b.ctx, `SELECT id, group_id FROM sweeper.outbox WHERE ticket_id = $1`, ids[3]).Scan(&row, &group); err != nil || group == 0 {
		t.Fatalf("ticket %d's alert: group %d, %v; want grouped", ids[3], group, err)
	}
	n := outbox.Notification{ID: row, TicketID: ids[3], Kind: outbox.KindOpened, GroupID: group, DedupeKey: openedKey(ids[3])}
	var release *notify.ReleaseError
	if err := slack.Prepare(b.ctx, d, &n); !errors.As(err, &release) {
		t.Errorf("Prepare of a grouped alert whose group's message is pending: %v; want it given back to wait", err)
	}
	// Once the group's message is out, the alert goes on.
	if _, err := b.pool.Exec(b.ctx, `UPDATE sweeper.outbox SET lease_until = now() WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
	d2 := b.dispatcher(t, "d2", func(c *slack.Config) {
		c.Composer = slack.TicketComposer{Tickets: c.Tickets}
		c.GroupThreshold = 3
	})
	b.drain(t, d2)
	if err := slack.Prepare(b.ctx, d2, &n); err != nil {
		t.Errorf("Prepare once the group's message is posted: %v", err)
	}
	groups := b.groupRoots()
	if len(groups) != 1 {
		t.Fatalf("%d group messages, want 1", len(groups))
	}
	for _, id := range ids {
		if m := b.requireOne(t, openedKey(id)); m.ThreadTS != groups[0].TS {
			t.Errorf("ticket %d's alert in thread %q, want the group's %s", id, m.ThreadTS, groups[0].TS)
		}
	}
}

// groupID is the alert group whose message m is, from its dedupe key.
func groupID(t *testing.T, m slackfake.Message) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscanf(m.DedupeKey(), "group:%d:opened", &id); err != nil {
		t.Fatalf("message %s is no alert group's: %v", m.TS, err)
	}
	return id
}
