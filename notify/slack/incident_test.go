package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/slackfake"
	"github.com/sweeper/sweeper/testkit/testwait"
)

const acmeChannel = "C0ACME"

// incidentChannels route the acme provider's alerts to a channel of its own.
var incidentChannels = slack.Channels{Default: alertsChannel, Providers: map[string]string{"acme": acmeChannel}}

// pending writes n pending operations of provider, as workflows do before
// they call it.
func (b *bundle) pending(t *testing.T, provider string, n int) {
	t.Helper()
	for range n {
		_, err := ledger.NewStore(b.pool, ledger.Native()).Claim(b.ctx, ledger.Attempt{
			OpKey: fmt.Sprintf("op-%s-%d", t.Name(), b.ops.Add(1)), Workflow: "onboarding", Provider: provider,
			Action: "send_email", Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"template":"welcome"}`),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// down has a tracker see failures in a row until provider is down.
func (b *bundle) down(t *testing.T, tr *health.Tracker) {
	t.Helper()
	for i := range health.DefaultFailures {
		if err := tr.Done(b.ctx, false, true, fmt.Sprintf("op-%d", i), "503 Service Unavailable"); err != nil {
			t.Fatal(err)
		}
	}
}

// up has a probe answered: the provider is up again.
func (b *bundle) up(t *testing.T, tr *health.Tracker, provider string) {
	t.Helper()
	if _, err := b.pool.Exec(b.ctx, `UPDATE sweeper.provider_health SET probe_at = now() WHERE provider = $1`, provider); err != nil {
		t.Fatal(err)
	}
	// Until the tracker's cached state (up, a second at most) gives way to
	// the table's: down, its probe due.
	testwait.UntilNil(t, 5*time.Second, "the probe's turn", func() error {
		if probe, _, err := tr.Allow(b.ctx); err != nil || !probe {
			return fmt.Errorf("probe: %v, %v", probe, err)
		}
		return nil
	})
	if err := tr.Done(b.ctx, true, false, "op-probe", ""); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) incidentIDs(t *testing.T, provider string) []int64 {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT id FROM sweeper.incidents WHERE provider = $1 ORDER BY id`, provider)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func incidentKey(id int64, what string) string { return fmt.Sprintf("incident:%d:%s", id, what) }

func (b *bundle) incidentDispatcher(t *testing.T, id string) *notify.Dispatcher {
	return b.dispatcher(t, id, func(c *slack.Config) { c.Channel = incidentChannels.For })
}

// TestIncidentOneMessage: a provider going down posts one root message in
// its channel, whatever the number of operations waiting; coming back edits
// it and replies once in its thread.
func TestIncidentOneMessage(t *testing.T) {
	b := setup(t)
	d := b.incidentDispatcher(t, "d1")
	b.pending(t, "acme", 12)
	tr := health.NewTracker(b.pool, "acme", health.DefaultFailures, time.Minute)

	b.down(t, tr)
	b.down(t, health.NewTracker(b.pool, "acme", health.DefaultFailures, time.Minute)) // another replica agrees
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("down: %+v, want one message", st)
	}
	ids := b.incidentIDs(t, "acme")
	if len(ids) != 1 {
		t.Fatalf("incidents %v, want 1", ids)
	}
	root := b.requireOne(t, incidentKey(ids[0], "opened"))
	if root.Channel != acmeChannel || root.ThreadTS != "" || !strings.Contains(root.Text, "12 operations waiting") ||
		!strings.Contains(root.Text, "unreachable since") {
		t.Errorf("root = %+v", root)
	}
	if got, _ := root.Metadata.EventPayload["incident_id"].(float64); int64(got) != ids[0] || len(root.Metadata.EventPayload) != 2 {
		t.Errorf("root metadata = %+v, want the dedupe key and the incident id alone", root.Metadata)
	}

	b.up(t, tr, "acme")
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("up: %+v, want one reply", st)
	}
	reply := b.requireOne(t, incidentKey(ids[0], "closed"))
	if reply.Channel != acmeChannel || reply.ThreadTS != root.TS || !strings.Contains(reply.Text, "Back after") ||
		!strings.Contains(reply.Text, "0 settled, 0 need review, 12 still being looked up") {
		t.Errorf("reply = %+v", reply)
	}
	root = b.fake.WithKey(incidentKey(ids[0], "opened"))[0]
	if root.Edits != 1 || !strings.Contains(root.Text, "back since") || root.DedupeKey() != incidentKey(ids[0], "opened") {
		t.Errorf("root after the end = %+v, want edited once to the ended incident", root)
	}
	if got := len(b.fake.Messages()); got != 2 {
		t.Errorf("%d messages, want 2", got)
	}

	// As the backlog settles, the root follows it: edited when the counts
	// change, not otherwise.
	slack.SetIncidentRefresh(d, 0)
	if _, err := b.pool.Exec(b.ctx, `UPDATE ledger.operations SET status = 'done', provider_record_id = 'rec-' || id
		WHERE id IN (SELECT id FROM ledger.operations WHERE provider = 'acme' ORDER BY id LIMIT 10)`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := d.DispatchOnce(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	root = b.fake.WithKey(incidentKey(ids[0], "opened"))[0]
	if root.Edits != 2 || !strings.Contains(root.Text, "10 settled, 0 need review, 2 still being looked up") {
		t.Errorf("root as the backlog settles = %d edits, %q; want 2 edits and the counts", root.Edits, root.Text)
	}
	if got := len(b.fake.Messages()); got != 2 {
		t.Errorf("%d messages, want still 2", got)
	}

	// The next outage is another incident, another message.
	b.down(t, tr)
	b.drain(t, d)
	if ids = b.incidentIDs(t, "acme"); len(ids) != 2 {
		t.Fatalf("incidents %v, want 2", ids)
	}
	b.requireOne(t, incidentKey(ids[1], "opened"))
}

// TestIncidentUncertainRootFound: a post of the incident's root whose answer
// was lost is found by its key, not posted again.
func TestIncidentUncertainRootFound(t *testing.T) {
	b := setup(t)
	d := b.incidentDispatcher(t, "d1")
	b.pending(t, "acme", 1)
	b.down(t, health.NewTracker(b.pool, "acme", health.DefaultFailures, time.Minute))
	b.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
	if st, err := d.DispatchOnce(b.ctx); err != nil || st.Uncertain != 1 {
		t.Fatalf("first attempt: %+v, %v; want uncertain", st, err)
	}
	if st := b.drain(t, d); st.Adopted != 1 {
		t.Errorf("second attempt: %+v, want the message adopted", st)
	}
	b.requireOne(t, incidentKey(b.incidentIDs(t, "acme")[0], "opened"))
	if got := len(b.fake.Calls("chat.postMessage")); got != 1 {
		t.Errorf("%d posts, want 1", got)
	}
	if len(b.fake.Calls("conversations.history")) == 0 {
		t.Error("the root was not searched for")
	}
}

// TestIncidentCrashAndDuplicateDispatch: a dispatcher killed after its post
// and before recording it, then two dispatchers draining at once, leave
// one root and one reply.
func TestIncidentCrashAndDuplicateDispatch(t *testing.T) {
	b := setup(t)
	b.pending(t, "acme", 3)
	tr := health.NewTracker(b.pool, "acme", health.DefaultFailures, time.Minute)
	b.down(t, tr)
	claimed, err := b.outbox.Claim(b.ctx, "killed", 50*time.Millisecond, 10)
	if err != nil || len(claimed) != 1 || claimed[0].IncidentID == 0 {
		t.Fatalf("claim: %+v, %v", claimed, err)
	}
	// The killed dispatcher's post, with its key, in the incident's channel.
	b.fake.Add(slackfake.Message{Channel: acmeChannel, Text: "acme unreachable",
		Metadata: &slackfake.Metadata{EventType: "sweeper_ticket",
			EventPayload: map[string]any{"dedupe_key": claimed[0].DedupeKey, "incident_id": claimed[0].IncidentID}}})
	time.Sleep(100 * time.Millisecond) // the lease ends
	b.up(t, tr, "acme")

	var wg sync.WaitGroup
	for i := range 2 {
		d := b.incidentDispatcher(t, fmt.Sprintf("d%d", i))
		wg.Go(func() {
			if _, err := d.Drain(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b.drain(t, b.incidentDispatcher(t, "d3"))
	id := claimed[0].IncidentID
	root := b.requireOne(t, incidentKey(id, "opened"))
	reply := b.requireOne(t, incidentKey(id, "closed"))
	if reply.ThreadTS != root.TS {
		t.Errorf("reply in thread %q, root %s", reply.ThreadTS, root.TS)
	}
	if got := len(b.fake.Calls("chat.postMessage")); got != 1 {
		t.Errorf("%d posts by the dispatchers, want 1 (the reply; the root was adopted)", got)
	}
}

// settle marks n of provider's pending operations done, oldest first, as
// lookups that found their records do.
func (b *bundle) settle(t *testing.T, provider string, n int) {
	t.Helper()
	if _, err := b.pool.Exec(b.ctx, `UPDATE ledger.operations SET status = 'done', provider_record_id = 'rec-' || id
		WHERE id IN (SELECT id FROM ledger.operations WHERE provider = $1 AND status = 'pending' ORDER BY id LIMIT $2)`,
		provider, n); err != nil {
		t.Fatal(err)
	}
}

// outage takes acme down with n operations waiting, posts the incident's
// root, brings acme back and returns the incident's id; the closing row
// is left for the caller to deliver.
func (b *bundle) outage(t *testing.T, d *notify.Dispatcher, n int) int64 {
	t.Helper()
	b.pending(t, "acme", n)
	tr := health.NewTracker(b.pool, "acme", health.DefaultFailures, time.Minute)
	b.down(t, tr)
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("down: %+v, want the incident's root", st)
	}
	b.up(t, tr, "acme")
	ids := b.incidentIDs(t, "acme")
	if len(ids) != 1 {
		t.Fatalf("incidents %v, want 1", ids)
	}
	return ids[0]
}

// refresh has each dispatcher bring ended incidents up to date once.
func (b *bundle) refresh(t *testing.T, ds ...*notify.Dispatcher) {
	t.Helper()
	for _, d := range ds {
		if _, err := d.DispatchOnce(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIncidentReplyFollowsBacklog: the closing reply, posted while the
// backlog is still being looked up, is edited with the root as the counts
// change, down to the final ones; operations written after the end are not
// the incident's backlog. Nothing is posted twice.
func TestIncidentReplyFollowsBacklog(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Channel = incidentChannels.For
		c.IncidentRefresh = time.Nanosecond
	})
	id := b.outage(t, d, 10)
	b.settle(t, "acme", 1)
	b.drain(t, d)
	reply := b.requireOne(t, incidentKey(id, "closed"))
	if !strings.Contains(reply.Text, "1 settled, 0 need review, 9 still being looked up") {
		t.Fatalf("reply = %q", reply.Text)
	}

	b.settle(t, "acme", 5)
	b.pending(t, "acme", 2) // new work, after the end
	b.refresh(t, d)
	b.incidentShows(t, id, "6 settled, 0 need review, 4 still being looked up.")

	b.settle(t, "acme", 4)
	b.refresh(t, d, d)
	root, reply := b.incidentShows(t, id, "10 settled, 0 need review.")
	if reply.Edits != 2 || !strings.HasPrefix(reply.Text, "Back after ") || reply.ThreadTS != root.TS {
		t.Errorf("reply = %+v, want edited twice, once per change, in the root's thread", reply)
	}
	if got := len(b.fake.Calls("chat.postMessage")); got != 2 {
		t.Errorf("%d posts, want 2: the root and the reply", got)
	}
}

// TestIncidentRefreshTwoDispatchers: two dispatchers bringing the same
// incident up to date at once, while its backlog settles, post nothing
// and leave its messages at the final counts.
func TestIncidentRefreshTwoDispatchers(t *testing.T) {
	b := setup(t)
	ds := make([]*notify.Dispatcher, 2)
	for i := range ds {
		ds[i] = b.dispatcher(t, fmt.Sprintf("d%d", i), func(c *slack.Config) {
			c.Channel = incidentChannels.For
			c.IncidentRefresh = time.Nanosecond
		})
	}
	id := b.outage(t, ds[0], 20)

	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			for range 20 {
				if _, err := d.DispatchOnce(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 10 {
		b.settle(t, "acme", 2)
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	b.refresh(t, ds...)

	b.incidentShows(t, id, "20 settled, 0 need review.")
	b.onlyRootAndReply(t)
}

// TestIncidentReplyRetried: a closing reply whose post lost its answer is
// found in the thread, not posted again, and brought to the counts of
// when it is found and after; an edit whose answer was lost is made again.
func TestIncidentReplyRetried(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Channel = incidentChannels.For
		c.IncidentRefresh = time.Nanosecond
	})
	id := b.outage(t, d, 4)
	b.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
	if st, err := d.DispatchOnce(b.ctx); err != nil || st.Uncertain != 1 {
		t.Fatalf("closing reply: %+v, %v; want uncertain", st, err)
	}
	b.settle(t, "acme", 3)
	if st := b.drain(t, d); st.Adopted != 1 {
		t.Fatalf("retry: %+v, want the reply adopted", st)
	}
	reply := b.requireOne(t, incidentKey(id, "closed"))
	if !strings.Contains(reply.Text, "3 settled, 0 need review, 1 still being looked up.") {
		t.Errorf("adopted reply = %q, want the counts as they are now", reply.Text)
	}

	b.settle(t, "acme", 1)
	b.fake.Inject("chat.update", slackfake.Fault{Error: "internal_error"}, slackfake.Fault{Drop: true})
	b.refresh(t, d)
	b.refresh(t, d)
	b.incidentShows(t, id, "4 settled, 0 need review.")
	b.onlyRootAndReply(t)
}

// TestIncidentRefreshNegative: a negative refresh is refused by name.
func TestIncidentRefreshNegative(t *testing.T) {
	b := setup(t)
	_, err := slack.NewDispatcher(b.pool, slack.Config{DispatcherConfig: notify.DispatcherConfig{Tickets: review.NewReader(b.pool, ledger.Native())},
		Token: slackfake.Token, Composer: testComposer, Channel: incidentChannels.For, IncidentRefresh: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "IncidentRefresh must not be negative") {
		t.Errorf("err = %v, want IncidentRefresh named", err)
	}
}

// updatesOf counts the chat.update calls on the message at ts.
func (b *bundle) updatesOf(ts string) int {
	n := 0
	for _, c := range b.fake.Calls("chat.update") {
		if len(c.Form["ts"]) > 0 && c.Form["ts"][0] == ts {
			n++
		}
	}
	return n
}

// TestIncidentRefreshHoldsNothingDuringEdit: while Slack takes its time to
// answer an edit of an incident's message, the dispatcher holds no
// connection, no transaction and no lock in the database.
func TestIncidentRefreshHoldsNothingDuringEdit(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Channel = incidentChannels.For
		c.IncidentRefresh = time.Nanosecond
	})
	id := b.outage(t, d, 4)
	b.drain(t, d)
	b.settle(t, "acme", 2)
	before := len(b.fake.Calls("chat.update"))
	b.fake.Inject("chat.update", slackfake.Fault{Apply: true, Delay: 1500 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := d.DispatchOnce(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	testwait.UntilNil(t, 5*time.Second, "the slow edit", func() error {
		if len(b.fake.Calls("chat.update")) == before {
			return fmt.Errorf("no edit yet")
		}
		return nil
	})
	held := b.pool.Stat().AcquiredConns()
	var idle, locks int
	if err := b.pool.QueryRow(b.ctx, `SELECT
			(SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
			   AND (state LIKE 'idle in transaction%' OR xact_start IS NOT NULL)),
			(SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			   WHERE a.datname = current_database() AND l.locktype = 'advisory')`).Scan(&idle, &locks); err != nil {
		t.Fatal(err)
	}
	<-done
	if held != 0 || idle != 0 || locks != 0 {
		t.Errorf("during the edit: %d connections acquired, %d sessions in a transaction, %d advisory locks; want none", held, idle, locks)
	}
	for _, key := range []string{"opened", "closed"} {
		if m := b.requireOne(t, incidentKey(id, key)); !strings.Contains(m.Text, "2 settled, 0 need review, 2 still being looked up.") {
			t.Errorf("%s: %q, want the counts after the slow edit", key, m.Text)
		}
	}
}

// TestIncidentCountsOnlyItsBacklog: operations written after the incident
// ended, settled or reviewed, are not its counts, and do not keep its
// messages changing once its backlog has settled.
func TestIncidentCountsOnlyItsBacklog(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Channel = incidentChannels.For
		c.IncidentRefresh = time.Nanosecond
	})
	id := b.outage(t, d, 3)
	b.drain(t, d)
	b.settle(t, "acme", 3)
	b.refresh(t, d)
	root := b.requireOne(t, incidentKey(id, "opened"))
	reply := b.requireOne(t, incidentKey(id, "closed"))
	rootEdits, replyEdits := root.Edits, reply.Edits

	// New work after the end: settled, and one needing review.
	b.pending(t, "acme", 4)
	b.settle(t, "acme", 4)
	b.openTicketOf(t, "onboarding", "acme")
	in, err := notify.ReadIncident(b.ctx, b.pool, review.NewReader(b.pool, ledger.Native()), id)
	if err != nil {
		t.Fatal(err)
	}
	if in.Settled != 3 || in.Review != 0 || in.Pending != 0 {
		t.Errorf("counts = %d settled, %d review, %d pending; want 3, 0, 0: the backlog alone", in.Settled, in.Review, in.Pending)
	}
	b.refresh(t, d, d)
	root = b.requireOne(t, incidentKey(id, "opened"))
	reply = b.requireOne(t, incidentKey(id, "closed"))
	if root.Edits != rootEdits || reply.Edits != replyEdits || !strings.Contains(reply.Text, "3 settled, 0 need review.") {
		t.Errorf("after new work: root edited %d times (was %d), reply %d (was %d), %q; want no edit, the backlog's counts",
			root.Edits, rootEdits, reply.Edits, replyEdits, reply.Text)
	}
}

// TestIncidentEditRateLimited: a 429 on an incident's edit closes its
// channel for Slack's Retry-After: the reply's edit and the channel's
// alerts wait, nothing is called there meanwhile.
func TestIncidentEditRateLimited(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Channel = incidentChannels.For
		c.IncidentRefresh = time.Nanosecond
	})
	id := b.outage(t, d, 4)
	b.drain(t, d)
	b.settle(t, "acme", 1)
	updates := len(b.fake.Calls("chat.update"))
	b.fake.Inject("chat.update", slackfake.Fault{Status: 429, RetryAfter: "30"})
	b.refresh(t, d)
	if got := len(b.fake.Calls("chat.update")) - updates; got != 1 {
		t.Errorf("%d edits after the 429, want 1: the reply waits for the channel", got)
	}

	// The channel is closed: an alert bound there is given back, and the
	// next refresh calls nothing.
	posts := len(b.fake.Calls("chat.postMessage"))
	b.openTicketOf(t, "onboarding", "acme")
	st, err := d.DispatchOnce(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Released != 1 || len(b.fake.Calls("chat.postMessage")) != posts || len(b.fake.Calls("chat.update")) != updates+1 {
		t.Errorf("while the channel is closed: %+v, %d posts, %d edits; want the alert released and no call",
			st, len(b.fake.Calls("chat.postMessage"))-posts, len(b.fake.Calls("chat.update"))-updates)
	}
	if m := b.requireOne(t, incidentKey(id, "closed")); strings.Contains(m.Text, "1 settled") {
		t.Errorf("reply = %q, edited while the channel was closed", m.Text)
	}
}

// TestIncidentRootDeleted: a root message a person deleted is edited no
// more, by any dispatcher; the closing reply still is.
func TestIncidentRootDeleted(t *testing.T) {
	b := setup(t)
	ds := make([]*notify.Dispatcher, 2)
	for i := range ds {
		ds[i] = b.dispatcher(t, fmt.Sprintf("d%d", i), func(c *slack.Config) {
			c.Channel = incidentChannels.For
			c.IncidentRefresh = time.Nanosecond
		})
	}
	id := b.outage(t, ds[0], 4)
	b.drain(t, ds[0])
	root := b.requireOne(t, incidentKey(id, "opened"))
	edits := b.updatesOf(root.TS)
	if !b.fake.Delete(acmeChannel, root.TS) {
		t.Fatal("root not deleted")
	}
	for i := range 3 {
		b.settle(t, "acme", 1)
		b.refresh(t, ds[i%2])
	}
	if got := b.updatesOf(root.TS) - edits; got != 1 {
		t.Errorf("%d edits of the deleted root, want 1: the one that found it gone", got)
	}
	if got := len(b.fake.Calls("chat.postMessage")); got != 2 {
		t.Errorf("%d posts, want 2: no new root", got)
	}
}

// incidentShows checks that incident id's root and closing reply both say
// want, and returns them.
func (b *bundle) incidentShows(t *testing.T, id int64, want string) (root, reply slackfake.Message) {
	t.Helper()
	reply = b.requireOne(t, incidentKey(id, "closed"))
	root = b.requireOne(t, incidentKey(id, "opened"))
	for _, m := range []string{reply.Text, root.Text} {
		if !strings.Contains(m, want) || (strings.HasSuffix(want, "need review.") && strings.Contains(m, "still being looked up")) {
			t.Errorf("%q, want %q", m, want)
		}
	}
	return root, reply
}

// onlyRootAndReply checks that the incident's root and reply are all that
// was ever posted.
func (b *bundle) onlyRootAndReply(t *testing.T) {
	t.Helper()
	if got := len(b.fake.Calls("chat.postMessage")); got != 2 {
		t.Errorf("%d posts, want 2: the root and the reply", got)
	}
	if got := len(b.fake.Messages()); got != 2 {
		t.Errorf("%d messages, want 2", got)
	}
}
