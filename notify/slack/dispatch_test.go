package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goslack "github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// Channels of the tests: billing tickets have their own.
const (
	alertsChannel  = "C0ALERTS"
	billingChannel = "C0BILLING"
)

var testChannels = slack.Channels{
	Default:   alertsChannel,
	Workflows: map[string]string{"billing": billingChannel},
}

// testComposer writes what identifies the row; replies are broadcast and
// edit the root.
var testComposer = slack.ComposerFunc(func(_ context.Context, _ ledger.DB, n outbox.Notification) (message.Post, error) {
	p := message.Post{Text: fmt.Sprintf("%s (%s)", n.Kind, n.DedupeKey)}
	if n.Kind != outbox.KindOpened {
		p.Broadcast = true
		p.RootEdit = &message.RootEdit{Text: fmt.Sprintf("ticket %d: %s", n.TicketID, n.Kind)}
	}
	return p, nil
})

type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	fake   *slackfake.Server
	outbox *outbox.Store
	// silences is the silences' store, the dispatchers' muter.
	silences *silence.Store
	ops      atomic.Int64
}

// setup gives a test a database of its own (dispatchers commit, and
// several use it at once) and a fake Slack.
func setup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	pool := dbtest.NewPool(t)
	return &bundle{ctx: context.Background(), pool: pool, fake: slackfake.New(t), outbox: outbox.NewStore(pool),
		silences: silence.NewStore(pool)}
}

// dispatcher returns a dispatcher on the bundle's database and fake, fast
// for tests: no pacing and no backoff unless cfg says otherwise.
func (b *bundle) dispatcher(t *testing.T, id string, edit func(*slack.Config)) *notify.Dispatcher {
	t.Helper()
	cfg := slack.Config{
		DispatcherConfig: notify.DispatcherConfig{
			Tickets: review.NewReader(b.pool, ledger.Native()),
			Muter:   b.silences,
			ID:      id,
			Lease:   30 * time.Second,
			Backoff: func(int) time.Duration { return 0 },
			Logger:  slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		},
		Token:      slackfake.Token,
		APIURL:     b.fake.URL(),
		Composer:   testComposer,
		Channel:    testChannels.For,
		PerChannel: rate.Inf,
	}
	if edit != nil {
		edit(&cfg)
	}
	d, err := slack.NewTestDispatcher(b.pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

var testPolicy = review.Policy{DefaultOwner: "U0OWNER", Window: 4 * time.Hour, Priority: "high"}

// openTicket has sweeper open a review ticket the way a lookup does, and
// returns its id; its "opened" event writes the first outbox row.
func (b *bundle) openTicket(t *testing.T, workflow string) int64 {
	t.Helper()
	return b.openTicketOf(t, workflow, "mailer")
}

// openTicketOf is openTicket for an operation of provider.
func (b *bundle) openTicketOf(t *testing.T, workflow, provider string) int64 {
	t.Helper()
	key := fmt.Sprintf("op-%s-%d", t.Name(), b.ops.Add(1))
	c, err := ledger.NewStore(b.pool, ledger.Native()).Claim(b.ctx, ledger.Attempt{
		OpKey: key, Workflow: workflow, Provider: provider, Action: "send_email",
		Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"template":"welcome"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := proof.Decide(c.Operation, proof.Answered(proof.SearchFor(c.Operation, providers.Matching{ByKey: true}, now), nil))
	ev := proof.NewEvidence(c.Operation, proof.LookupReport{Adapter: "sim", Outcome: proof.Answered(providers.Query{}, nil), At: now}, d)
	applied, err := review.NewStore(b.pool, ledger.Native(), testPolicy).Apply(b.ctx, c.Operation, d, ev, now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("open ticket: %+v, %v", applied, err)
	}
	return applied.TicketID
}

// event appends an audit event to a ticket, as escalation and resolution
// do, and returns its dedupe key.
func (b *bundle) event(t *testing.T, ticketID int64, kind, suffix string) string {
	t.Helper()
	key := fmt.Sprintf("ticket:%d:%s", ticketID, suffix)
	_, err := b.pool.Exec(b.ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		VALUES ($1, $2, 'sweeper', $3) ON CONFLICT (dedupe_key) DO NOTHING`, ticketID, kind, key)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func openedKey(ticketID int64) string { return fmt.Sprintf("ticket:%d:opened", ticketID) }

// row returns the outbox row of dedupeKey.
func (b *bundle) row(t *testing.T, dedupeKey string) outbox.Notification {
	t.Helper()
	var id int64
	if err := b.pool.QueryRow(b.ctx, `SELECT id FROM sweeper.outbox WHERE dedupe_key = $1`, dedupeKey).Scan(&id); err != nil {
		t.Fatalf("outbox row %s: %v", dedupeKey, err)
	}
	n, err := b.outbox.Get(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// requireOne checks that Slack holds exactly one message for dedupeKey and
// that its row is sent with that message's channel and ts.
func (b *bundle) requireOne(t *testing.T, dedupeKey string) slackfake.Message {
	t.Helper()
	msgs := b.fake.WithKey(dedupeKey)
	if len(msgs) != 1 {
		t.Fatalf("%s: %d messages in Slack, want exactly 1: %+v", dedupeKey, len(msgs), msgs)
	}
	n := b.row(t, dedupeKey)
	if n.State != outbox.StateSent || n.Reference != msgs[0].TS || n.Destination != msgs[0].Channel {
		t.Fatalf("%s: row %s at %s/%s, message at %s/%s", dedupeKey, n.State, n.Destination, n.Reference, msgs[0].Channel, msgs[0].TS)
	}
	return msgs[0]
}

func (b *bundle) drain(t *testing.T, d *notify.Dispatcher) notify.Stats {
	t.Helper()
	st, err := d.Drain(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRootMessageThenThreadReplies(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", nil)
	id := b.openTicket(t, "billing")

	st := b.drain(t, d)
	if st.Sent != 1 || st.Claimed != 1 {
		t.Fatalf("first drain: %+v", st)
	}
	root := b.requireOne(t, openedKey(id))
	if root.Channel != billingChannel || root.ThreadTS != "" {
		t.Errorf("root message in %s, thread %q; want %s, top level", root.Channel, root.ThreadTS, billingChannel)
	}
	if root.Metadata == nil || root.Metadata.EventType != "sweeper_ticket" {
		t.Errorf("root metadata = %+v", root.Metadata)
	}

	escalated := b.event(t, id, review.EventEscalated, "escalated:1")
	acked := b.event(t, id, review.EventAcknowledged, "acknowledged:1")
	st = b.drain(t, d)
	if st.Sent != 2 {
		t.Fatalf("second drain: %+v", st)
	}
	for _, key := range []string{escalated, acked} {
		m := b.requireOne(t, key)
		if m.Channel != billingChannel || m.ThreadTS != root.TS || !m.Broadcast {
			t.Errorf("%s: in %s, thread %q, broadcast %v; want a broadcast reply to %s", key, m.Channel, m.ThreadTS, m.Broadcast, root.TS)
		}
	}
	// Replies go out in event order, each editing the root.
	if e, a := b.fake.WithKey(escalated)[0].TS, b.fake.WithKey(acked)[0].TS; e >= a {
		t.Errorf("escalation reply %s not before acknowledgement reply %s", e, a)
	}
	root = b.fake.WithKey(openedKey(id))[0]
	if root.Edits != 2 || root.Text != fmt.Sprintf("ticket %d: %s", id, review.EventAcknowledged) {
		t.Errorf("root edited %d times, text %q; want 2 edits, the last event's text", root.Edits, root.Text)
	}
	if root.DedupeKey() != openedKey(id) {
		t.Errorf("root lost its metadata in the edit: %+v", root.Metadata)
	}
	if st := b.drain(t, d); st.Claimed != 0 {
		t.Errorf("third drain claimed %d rows", st.Claimed)
	}
	if got := len(b.fake.Messages()); got != 3 {
		t.Errorf("%d messages in Slack, want 3", got)
	}
}

func TestDuplicateEnqueueIsOneRow(t *testing.T) {
	b := setup(t)
	id := b.openTicket(t, "onboarding")
	key := b.event(t, id, review.EventEscalated, "escalated:1")
	b.event(t, id, review.EventEscalated, "escalated:1") // the same step again: ON CONFLICT DO NOTHING

	var rows int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM sweeper.outbox WHERE ticket_id = $1`, id).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Fatalf("%d outbox rows, want 2 (opened, escalated once)", rows)
	}
	// The outbox's own key refuses a second row, whoever writes it.
	_, err := b.pool.Exec(b.ctx, `INSERT INTO sweeper.outbox (event_id, ticket_id, dedupe_key, kind)
		SELECT id + 1000000, ticket_id, dedupe_key, kind FROM sweeper.ticket_events WHERE dedupe_key = $1`, key)
	if err == nil || !strings.Contains(err.Error(), "outbox") {
		t.Fatalf("a second outbox row for %s: err = %v, want a constraint violation", key, err)
	}
	// Nor can a row be deleted.
	if _, err := b.pool.Exec(b.ctx, `DELETE FROM sweeper.outbox WHERE dedupe_key = $1`, key); err == nil {
		t.Fatal("deleted an outbox row")
	}

	d := b.dispatcher(t, "d1", nil)
	b.drain(t, d)
	b.requireOne(t, openedKey(id))
	b.requireOne(t, key)
}

// TestOutboxRowInTicketTransaction: the row exists exactly when the event
// does — written by the trigger in the ticket's transaction.
func TestOutboxRowInTicketTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	// The ticket's transaction is sweeper's: only it puts a row in review.
	if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
		t.Fatal(err)
	}
	var opID, ticketID int64
	err := tx.QueryRow(ctx, `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status)
		VALUES ('op-tx', 'billing', 'mailer', 'send_email', repeat('a', 64), 'review') RETURNING id`).Scan(&opID)
	if err != nil {
		t.Fatal(err)
	}
	err = tx.QueryRow(ctx, `INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
		VALUES ($1, 'op-tx', 'not_found', 'U0OWNER', 'high', now() + interval '1 hour', '{}') RETURNING id`, opID).Scan(&ticketID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT before_event`); err != nil {
		t.Fatal(err)
	}
	var eventID int64
	err = tx.QueryRow(ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		VALUES ($1::bigint, 'opened', 'sweeper', 'ticket:' || $1::text || ':opened') RETURNING id`, ticketID).Scan(&eventID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := outbox.NewStore(tx).List(ctx, outbox.Filter{TicketID: ticketID})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("%d outbox rows, want 1", len(list))
	}
	n := list[0]
	if n.EventID != eventID || n.Kind != "opened" || n.DedupeKey != fmt.Sprintf("ticket:%d:opened", ticketID) ||
		n.State != outbox.StatePending || n.Attempts != 0 || n.Uncertain {
		t.Errorf("outbox row = %+v", n)
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT before_event`); err != nil {
		t.Fatal(err)
	}
	if list, _ := outbox.NewStore(tx).List(ctx, outbox.Filter{TicketID: ticketID}); len(list) != 0 {
		t.Errorf("outbox row outlived its event's rollback: %+v", list)
	}
}

// TestRetriedDispatchPostsNothingNew: dispatching again, however often,
// adds no message.
func TestRetriedDispatchPostsNothingNew(t *testing.T) {
	b := setup(t)
	id := b.openTicket(t, "onboarding")
	key := b.event(t, id, review.EventEscalated, "escalated:1")
	d := b.dispatcher(t, "d1", nil)
	for range 3 {
		b.drain(t, d)
		if _, err := d.DispatchOnce(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A dispatcher with another id, as after a restart.
	b.drain(t, b.dispatcher(t, "d2", nil))
	b.requireOne(t, openedKey(id))
	b.requireOne(t, key)
	if got := len(b.fake.Calls("chat.postMessage")); got != 2 {
		t.Errorf("%d posts, want 2", got)
	}
}

// TestTwoDispatchersAtOnce: two dispatchers on one database, each with
// several workers, share the rows and post each message once.
func TestTwoDispatchersAtOnce(t *testing.T) {
	b := setup(t)
	const tickets = 15
	var keys []string
	for i := range tickets {
		workflow := "onboarding"
		if i%3 == 0 {
			workflow = "billing"
		}
		id := b.openTicket(t, workflow)
		keys = append(keys, openedKey(id), b.event(t, id, review.EventEscalated, "escalated:1"))
	}
	// Slow answers widen the window in which both dispatchers work.
	b.fake.Always("chat.postMessage", slackfake.Fault{Delay: 5 * time.Millisecond, Apply: true})
	small := func(c *slack.Config) { c.BatchSize = 3 }
	dispatchers := []*notify.Dispatcher{b.dispatcher(t, "d1", small), b.dispatcher(t, "d2", small)}
	var wg sync.WaitGroup
	stats := make([]notify.Stats, len(dispatchers))
	for i, d := range dispatchers {
		wg.Go(func() {
			// Drain until every row is sent: a dispatcher may find
			// nothing claimable while the other holds a ticket's root.
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) {
				st, err := d.Drain(b.ctx)
				if err != nil {
					t.Error(err)
					return
				}
				stats[i].Claimed += st.Claimed
				stats[i].Sent += st.Sent
				counts, err := b.outbox.Counts(b.ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if counts[outbox.StateSent] == len(keys) {
					return
				}
				// Spaces the drains, in a goroutine of its own where
				// testwait cannot end the test.
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	for _, key := range keys {
		b.requireOne(t, key)
	}
	if got := len(b.fake.Messages()); got != len(keys) {
		t.Errorf("%d messages in Slack, want %d", got, len(keys))
	}
	if stats[0].Sent+stats[1].Sent != len(keys) {
		t.Errorf("sent %d + %d, want %d", stats[0].Sent, stats[1].Sent, len(keys))
	}
	t.Logf("d1 %+v, d2 %+v", stats[0], stats[1])
}

// TestLostAnswerIsFoundNotResent: Slack takes the post and the connection
// drops before the answer. The attempt is uncertain; the next one finds the
// message by its key — in the channel for a root message, in the thread for
// a reply — and adopts it.
func TestLostAnswerIsFoundNotResent(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		reply  bool
		search string
	}{
		{desc: "root message", search: "conversations.history"},
		{desc: "thread reply", reply: true, search: "conversations.replies"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := setup(t)
			d := b.dispatcher(t, "d1", nil)
			id := b.openTicket(t, "onboarding")
			key := openedKey(id)
			if tc.reply {
				b.drain(t, d)
				key = b.event(t, id, review.EventEscalated, "escalated:1")
			}
			b.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
			st, err := d.DispatchOnce(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Uncertain != 1 {
				t.Fatalf("stats %+v, want one uncertain", st)
			}
			n := b.row(t, key)
			if n.State != outbox.StatePending || !n.Uncertain || n.LastError == "" {
				t.Fatalf("after the drop: row %+v", n)
			}
			if got := len(b.fake.WithKey(key)); got != 1 {
				t.Fatalf("the dropped post left %d messages, want 1 (Slack took it)", got)
			}

			st = b.drain(t, d)
			if st.Sent != 1 || st.Adopted != 1 {
				t.Errorf("second attempt: %+v, want sent by adoption", st)
			}
			b.requireOne(t, key)
			if got := len(b.fake.Calls("chat.postMessage")); got != 1+btoi(tc.reply) {
				t.Errorf("%d posts, want %d", got, 1+btoi(tc.reply))
			}
			if len(b.fake.Calls(tc.search)) == 0 {
				t.Errorf("no %s call: the message was not searched for", tc.search)
			}
			if tc.reply {
				root := b.fake.WithKey(openedKey(id))[0]
				if root.Edits != 1 {
					t.Errorf("root edited %d times, want 1", root.Edits)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCrashAfterPostBeforeRecord: a dispatcher is killed after Slack took
// its post and before it stored the ts. Its lease runs out; the next
// claim knows the attempt's result is unknown, searches, and adopts.
func TestCrashAfterPostBeforeRecord(t *testing.T) {
	b := setup(t)
	id := b.openTicket(t, "onboarding")
	claimed, err := b.outbox.Claim(b.ctx, "killed", 50*time.Millisecond, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	// What the killed dispatcher managed to do: post, with the key.
	client := goslack.New(slackfake.Token, goslack.OptionAPIURL(b.fake.URL()))
	_, ts, err := client.PostMessage(alertsChannel, goslack.MsgOptionText("opened", false),
		goslack.MsgOptionMetadata(goslack.SlackMetadata{EventType: "sweeper_ticket",
			EventPayload: map[string]any{"dedupe_key": openedKey(id), "ticket_id": id}}))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the lease ends

	d := b.dispatcher(t, "d1", nil)
	st := b.drain(t, d)
	if st.Adopted != 1 {
		t.Errorf("stats %+v, want the message adopted", st)
	}
	if m := b.requireOne(t, openedKey(id)); m.TS != ts {
		t.Errorf("adopted ts %s, posted %s", m.TS, ts)
	}
	if n := b.row(t, openedKey(id)); !n.Uncertain || !strings.Contains(string(n.History), "lease_expired") {
		t.Errorf("row after the crash: uncertain %v, history %s", n.Uncertain, n.History)
	}
}

// TestServerErrorThenSuccess: a 5xx or ok:false internal_error leaves the
// post's fate unknown, whether or not Slack took it; the next attempt
// searches and posts only when the message is not there.
func TestServerErrorThenSuccess(t *testing.T) {
	for _, tc := range []struct {
		desc       string
		fault      slackfake.Fault
		wantAdopt  bool
		wantPosted int
	}{
		{desc: "500, not taken", fault: slackfake.Fault{Status: 500}, wantPosted: 2},
		{desc: "503, taken", fault: slackfake.Fault{Status: 503, Apply: true}, wantAdopt: true, wantPosted: 1},
		{desc: "internal_error, not taken", fault: slackfake.Fault{Error: "internal_error"}, wantPosted: 2},
		{desc: "fatal_error, taken", fault: slackfake.Fault{Error: "fatal_error", Apply: true}, wantAdopt: true, wantPosted: 1},
		{desc: "timeout, taken", fault: slackfake.Fault{Delay: 700 * time.Millisecond, Apply: true}, wantAdopt: true, wantPosted: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := setup(t)
			d := b.dispatcher(t, "d1", func(c *slack.Config) {
				c.HTTPClient = &http.Client{Timeout: 300 * time.Millisecond}
			})
			id := b.openTicket(t, "onboarding")
			b.fake.Inject("chat.postMessage", tc.fault)
			st, err := d.DispatchOnce(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Uncertain != 1 {
				t.Fatalf("first attempt: %+v, want uncertain", st)
			}
			st = b.drain(t, d)
			if st.Sent != 1 || (st.Adopted == 1) != tc.wantAdopt {
				t.Errorf("second attempt: %+v, adopted want %v", st, tc.wantAdopt)
			}
			b.requireOne(t, openedKey(id))
			if got := len(b.fake.Calls("chat.postMessage")); got != tc.wantPosted {
				t.Errorf("%d chat.postMessage calls, want %d", got, tc.wantPosted)
			}
		})
	}
}

// TestRateLimitHonoursRetryAfter: a 429 postpones the row by Retry-After
// plus jitter, and closes the channel for the other rows meanwhile without
// calling Slack for them.
func TestRateLimitHonoursRetryAfter(t *testing.T) {
	b := setup(t)
	first, second := b.openTicket(t, "onboarding"), b.openTicket(t, "onboarding")
	d := b.dispatcher(t, "d1", func(c *slack.Config) { c.Workers = 1 })
	b.fake.Inject("chat.postMessage", slackfake.Fault{Status: 429, RetryAfter: "1"})

	st, err := d.DispatchOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.RateLimited != 1 || st.Released != 1 {
		t.Fatalf("stats %+v, want one rate limited and one released", st)
	}
	if got := len(b.fake.Calls("chat.postMessage")); got != 1 {
		t.Fatalf("%d posts while the channel was rate limited, want 1", got)
	}
	n := b.row(t, openedKey(first))
	if n.Uncertain || n.State != outbox.StatePending || !strings.Contains(n.LastError, "rate limit") {
		t.Errorf("rate-limited row: %+v", n)
	}
	if wait := time.Until(n.LeaseUntil); wait < 800*time.Millisecond || wait > 1600*time.Millisecond {
		t.Errorf("retry due in %s, want Retry-After 1s plus jitter", wait)
	}
	if n := b.row(t, openedKey(second)); n.Attempts != 0 {
		t.Errorf("released row counts %d attempts, want 0", n.Attempts)
	}
	if st := b.drain(t, d); st.Sent != 0 {
		t.Errorf("posted before Retry-After passed: %+v", st)
	}

	testwait.Until(t, 5*time.Second, "both rows posted", func() bool {
		b.drain(t, d)
		return len(b.fake.Messages()) >= 2
	})
	b.requireOne(t, openedKey(first))
	b.requireOne(t, openedKey(second))
	posts := b.fake.Calls("chat.postMessage")
	if gap := posts[1].At.Sub(posts[0].At); gap < time.Second {
		t.Errorf("retried %s after the 429, want at least Retry-After (1s)", gap)
	}
	if len(b.fake.Calls("conversations.history")) != 0 {
		t.Errorf("searched after a 429: a rate-limited post is certainly not posted")
	}
}

// TestPermanentErrorParksUntilReplay: channel_not_found parks the row with
// its error; nothing is tried until a person replays it after the fix, and
// the ticket's replies wait for the root meanwhile.
func TestPermanentErrorParksUntilReplay(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", nil)
	id := b.openTicket(t, "onboarding")
	b.fake.Always("chat.postMessage", slackfake.Fault{Error: "channel_not_found"})

	st := b.drain(t, d)
	if st.Parked != 1 {
		t.Fatalf("stats %+v, want one parked", st)
	}
	root := b.row(t, openedKey(id))
	if root.State != outbox.StateParked || !strings.Contains(root.LastError, "channel_not_found") {
		t.Fatalf("row %+v, want parked with channel_not_found", root)
	}
	reply := b.event(t, id, review.EventEscalated, "escalated:1")
	if st := b.drain(t, d); st.Claimed != 0 {
		t.Fatalf("claimed %+v while the root is parked", st)
	}
	parked, err := b.outbox.List(b.ctx, outbox.Filter{State: outbox.StateParked})
	if err != nil || len(parked) != 1 || parked[0].ID != root.ID {
		t.Fatalf("parked list = %+v, %v", parked, err)
	}
	if counts, _ := b.outbox.Counts(b.ctx); counts[outbox.StateParked] != 1 || counts[outbox.StatePending] != 1 {
		t.Errorf("counts = %v", counts)
	}

	if _, err := b.outbox.Replay(b.ctx, b.row(t, reply).ID, "test"); !errors.Is(err, outbox.ErrNotParked) {
		t.Errorf("replay of a pending row: %v, want ErrNotParked", err)
	}
	if _, err := b.outbox.Replay(b.ctx, 1<<40, "test"); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("replay of no row: %v, want ErrNotificationNotFound", err)
	}

	b.fake.Clear() // the bot was invited to the channel
	replayed, err := b.outbox.Replay(b.ctx, root.ID, "ops@example")
	if err != nil {
		t.Fatal(err)
	}
	if replayed.State != outbox.StatePending || replayed.LastError == "" {
		t.Errorf("replayed row %+v, want pending with its last error kept", replayed)
	}
	st = b.drain(t, d)
	if st.Sent != 2 {
		t.Errorf("after replay: %+v, want root and reply sent", st)
	}
	b.requireOne(t, openedKey(id))
	b.requireOne(t, reply)
	sent := b.row(t, openedKey(id))
	history := string(sent.History)
	for _, event := range []string{`"parked"`, `"replayed"`, `"sent"`, "channel_not_found"} {
		if !strings.Contains(history, event) {
			t.Errorf("history lacks %s: %s", event, history)
		}
	}
	// Sent, the row no longer shows the error it was parked with: that
	// is history now, and the history keeps it.
	if sent.State != outbox.StateSent || sent.LastError != "" || sent.ErrorCode != "" {
		t.Errorf("sent row: state %s, last_error %q, error_code %q; want sent without an error", sent.State, sent.LastError, sent.ErrorCode)
	}
}

// TestFailedRootEditIsRetriedAlone: the reply is recorded before the
// root is edited, so an edit that fails is retried without a second reply.
func TestFailedRootEditIsRetriedAlone(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", nil)
	id := b.openTicket(t, "onboarding")
	b.drain(t, d)
	key := b.event(t, id, review.EventEscalated, "escalated:1")
	b.fake.Inject("chat.update", slackfake.Fault{Status: 500})
	st, err := d.DispatchOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Failed != 1 {
		t.Fatalf("stats %+v, want one failed", st)
	}
	if n := b.row(t, key); n.Reference == "" || n.State != outbox.StatePending || n.Uncertain {
		t.Fatalf("row after the failed edit: %+v", n)
	}
	b.drain(t, d)
	b.requireOne(t, key)
	if got := len(b.fake.Calls("chat.update")); got != 2 {
		t.Errorf("%d chat.update calls, want 2", got)
	}
	if got := len(b.fake.Calls("conversations.replies")); got != 0 {
		t.Errorf("searched %d times for a reply whose ts was recorded", got)
	}
}

// TestShutdownMidPostIsUncertain: a dispatcher stopped while a post is in
// flight records the attempt as uncertain, so the next one searches.
func TestShutdownMidPostIsUncertain(t *testing.T) {
	b := setup(t)
	id := b.openTicket(t, "onboarding")
	b.fake.Inject("chat.postMessage", slackfake.Fault{Delay: 300 * time.Millisecond, Apply: true})
	ctx, cancel := context.WithCancel(b.ctx)
	d := b.dispatcher(t, "d1", func(c *slack.Config) { c.PollInterval = 10 * time.Millisecond })
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	testwait.Until(t, 5*time.Second, "a post in flight", func() bool {
		return len(b.fake.Calls("chat.postMessage")) > 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v, want nil", err)
	}
	if n := b.row(t, openedKey(id)); !n.Uncertain || n.State != outbox.StatePending {
		t.Fatalf("row after shutdown: %+v", n)
	}
	b.drain(t, b.dispatcher(t, "d2", nil))
	b.requireOne(t, openedKey(id))
}

func TestLeaseFencesAnExpiredHolder(t *testing.T) {
	b := setup(t)
	id := b.openTicket(t, "onboarding")
	old, err := b.outbox.Claim(b.ctx, "slow", 10*time.Millisecond, 1)
	if err != nil || len(old) != 1 {
		t.Fatal(old, err)
	}
	time.Sleep(30 * time.Millisecond) // the 10ms lease ends: the scenario
	fresh, err := b.outbox.Claim(b.ctx, "fast", time.Minute, 1)
	if err != nil || len(fresh) != 1 {
		t.Fatal(fresh, err)
	}
	if !fresh[0].Uncertain || fresh[0].Attempts != 2 {
		t.Errorf("re-claimed row: uncertain %v, attempts %d; want uncertain, 2", fresh[0].Uncertain, fresh[0].Attempts)
	}
	if err := b.outbox.MarkSent(b.ctx, old[0], alertsChannel, "1.000001"); !errors.Is(err, outbox.ErrLeaseLost) {
		t.Errorf("the expired holder marked the row sent: %v", err)
	}
	if again, err := b.outbox.Claim(b.ctx, "third", time.Minute, 1); err != nil || len(again) != 0 {
		t.Errorf("a leased row was claimed again: %v, %v", again, err)
	}
	if err := b.outbox.MarkSent(b.ctx, fresh[0], alertsChannel, "1.000002"); err != nil {
		t.Fatal(err)
	}
	if n := b.row(t, openedKey(id)); n.State != outbox.StateSent || n.Reference != "1.000002" || n.LeasedBy != "" {
		t.Errorf("row = %+v", n)
	}
}

func TestChannelsFor(t *testing.T) {
	t.Parallel()
	c := slack.Channels{Default: "C0DEF", Workflows: map[string]string{"billing": "C0WF"}, Providers: map[string]string{"sms": "C0PV"}}
	for _, tc := range []struct {
		desc, workflow, provider, want string
	}{
		{desc: "workflow wins", workflow: "billing", provider: "sms", want: "C0WF"},
		{desc: "provider", workflow: "onboarding", provider: "sms", want: "C0PV"},
		{desc: "default", workflow: "onboarding", provider: "mailer", want: "C0DEF"},
	} {
		if got := c.For(tc.workflow, tc.provider); got != tc.want {
			t.Errorf("%s: For(%q, %q) = %q, want %q", tc.desc, tc.workflow, tc.provider, got, tc.want)
		}
	}
}

func TestNewDispatcherNamesMissingFields(t *testing.T) {
	t.Parallel()
	_, err := slack.NewDispatcher(nil, slack.Config{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, field := range []string{"database", "Token", "Composer", "Tickets", "Channel"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

// TestSearchReadsEveryPage: the lost post lies several pages back in a busy
// channel; the search pages through to it. A search that may not read that
// far is inconclusive, and posts nothing.
func TestSearchReadsEveryPage(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		pages     int
		wantRead  int
		wantAdopt bool
	}{
		// 451 messages since the attempt, 200 a page: the post is on the third.
		{desc: "enough pages", pages: 5, wantRead: 3, wantAdopt: true},
		{desc: "too few pages", pages: 1, wantRead: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := setup(t)
			d := b.dispatcher(t, "d1", func(c *slack.Config) { c.SearchPages = tc.pages })
			id := b.openTicket(t, "onboarding")
			b.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
			if st, err := d.DispatchOnce(b.ctx); err != nil || st.Uncertain != 1 {
				t.Fatalf("first attempt: %+v, %v", st, err)
			}
			for i := range 450 {
				b.fake.Add(slackfake.Message{Channel: alertsChannel, Text: fmt.Sprintf("chatter %d", i)})
			}
			st, err := d.DispatchOnce(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(b.fake.Calls("conversations.history")); got != tc.wantRead {
				t.Errorf("%d history pages read, want %d", got, tc.wantRead)
			}
			if got := len(b.fake.WithKey(openedKey(id))); got != 1 {
				t.Errorf("%d messages for the key, want 1", got)
			}
			if tc.wantAdopt {
				if st.Adopted != 1 {
					t.Errorf("stats %+v, want adopted", st)
				}
				b.requireOne(t, openedKey(id))
				return
			}
			n := b.row(t, openedKey(id))
			if st.Failed != 1 || n.State != outbox.StatePending || !n.Uncertain || !strings.Contains(n.LastError, "inconclusive") {
				t.Errorf("stats %+v, row %+v; want a failed, still uncertain attempt", st, n)
			}
		})
	}
}

// TestRedirectIsNeverFollowed: slack.api_url answering 302, 307 or 308
// (to Slack itself) never has the alert posted there, nor the row
// recorded sent: the row is parked redirect, saying to fix slack.api_url.
func TestRedirectIsNeverFollowed(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			b := setup(t)
			var asked atomic.Int32
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				http.Redirect(w, r, strings.TrimSuffix(b.fake.URL(), "/api/")+r.URL.Path, status)
			}))
			t.Cleanup(redirector.Close)
			d := b.dispatcher(t, "d1", func(c *slack.Config) { c.APIURL = redirector.URL + "/api/" })
			id := b.openTicket(t, "onboarding")
			st, err := d.DispatchOnce(b.ctx) // once: a row retried at once is not drained forever
			if err != nil {
				t.Fatal(err)
			}
			row := b.row(t, openedKey(id))
			if st.Sent != 0 || st.Parked != 1 || row.State != outbox.StateParked || row.ErrorCode != notify.CodeRedirect {
				t.Fatalf("%+v, row %+v; want parked %s, never sent", st, row, notify.CodeRedirect)
			}
			for _, s := range []string{strconv.Itoa(status), "redirects are not followed", "slack.api_url"} {
				if !strings.Contains(row.LastError, s) {
					t.Errorf("the row's error %q does not say %q", row.LastError, s)
				}
			}
			if n := len(b.fake.Messages()); n != 0 || asked.Load() == 0 {
				t.Errorf("Slack got %d messages through the redirect (slack.api_url asked %d times); want none", n, asked.Load())
			}
		})
	}
}
