package pagerduty_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/metrics/metricstest"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/pagerduty"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/pagerdutyfake"
)

type bundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	fake *pagerdutyfake.Server
	n    int
}

func setup(t *testing.T, routes ...outbox.Route) *bundle {
	t.Helper()
	t.Parallel()
	b := &bundle{ctx: context.Background(), pool: dbtest.NewPool(t), fake: pagerdutyfake.New(t)}
	if _, err := outbox.NewRoutes(b.pool).SetRoutes(b.ctx, routes); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) dispatcher(t *testing.T, id string, key string, now func() time.Time) *notify.Dispatcher {
	t.Helper()
	tickets := review.NewReader(b.pool, ledger.Native())
	r, err := pagerduty.New(pagerduty.Config{RoutingKey: key, URL: b.fake.URL(), Tickets: tickets, GiveUpAfter: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	d, err := notify.NewDispatcher(b.pool, r, notify.DispatcherConfig{
		Tickets: tickets, Muter: silence.NewStore(b.pool), ID: id, Receiver: outbox.ReceiverPagerDuty, Lease: 30 * time.Second,
		Backoff: func(int) time.Duration { return 0 },
		Logger:  slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
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

var policy = review.Policy{DefaultOwner: "U0OWNER", Window: 4 * time.Hour, Priority: "normal"}

// open has sweeper open a ticket for an operation of workflow, as a lookup
// does.
func (b *bundle) open(t *testing.T, workflow string) int64 {
	t.Helper()
	b.n++
	c, err := ledger.NewStore(b.pool, ledger.Native()).Claim(b.ctx, ledger.Attempt{
		OpKey: fmt.Sprintf("op-%s-%d", t.Name(), b.n), Workflow: workflow, Provider: "mailer", Action: "send_email",
		Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"template":"receipt"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := proof.Decide(c.Operation, proof.Answered(proof.SearchFor(c.Operation, providers.Matching{ByKey: true}, now), nil))
	ev := proof.NewEvidence(c.Operation, proof.LookupReport{Adapter: "sim", Outcome: proof.Answered(providers.Query{}, nil), At: now}, d)
	applied, err := review.NewStore(b.pool, ledger.Native(), policy).Apply(b.ctx, c.Operation, d, ev, now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("open ticket: %+v, %v", applied, err)
	}
	return applied.TicketID
}

// escalate takes ticket id one level up, to owner at priority.
func (b *bundle) escalate(t *testing.T, id int64, owner, priority string) {
	t.Helper()
	store := review.NewStore(b.pool, ledger.Native(), policy)
	et, err := store.EscalationTicket(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	step := review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: et.Level, ToLevel: et.Level + 1,
		Owner: owner, Priority: priority, Deadline: time.Now().Add(time.Hour)}
	ok, err := store.Escalate(b.ctx, et, step, review.EscalatedDetails{Step: step.Kind, FromLevel: step.FromLevel,
		ToLevel: step.ToLevel, Owner: owner, Priority: priority, Deadline: step.Deadline}, nil)
	if err != nil || !ok {
		t.Fatalf("escalate ticket %d: %v, %v", id, ok, err)
	}
}

func (b *bundle) ticket(t *testing.T, id int64) review.Ticket {
	t.Helper()
	tk, err := review.NewReader(b.pool, ledger.Native()).Ticket(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func (b *bundle) drain(t *testing.T, d *notify.Dispatcher) notify.Stats {
	t.Helper()
	st, err := d.Drain(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// rows returns the receiver's rows of ticket id, oldest first.
func (b *bundle) rows(t *testing.T, id int64, receiver string) []outbox.Notification {
	t.Helper()
	list, err := outbox.NewStore(b.pool).List(b.ctx, outbox.Filter{TicketID: id, Receiver: receiver})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

var paymentsRoutes = []outbox.Route{
	{Receiver: outbox.ReceiverPagerDuty, Workflow: "payments", Level: 2},
	{Receiver: outbox.ReceiverSlack},
}

// TestTicketLifeIsOneAlert: a ticket of workflow payments, routed to
// PagerDuty from level 2, opened, escalated twice, acknowledged and
// resolved, gives PagerDuty exactly trigger, acknowledge, resolve under one
// dedup key — one incident, resolved — while Slack has every event.
func TestTicketLifeIsOneAlert(t *testing.T) {
	b := setup(t, paymentsRoutes...)
	d := b.dispatcher(t, "pd1", pagerdutyfake.RoutingKey, nil)
	id := b.open(t, "payments")
	other := b.open(t, "newsletter") // never routed to PagerDuty
	if st := b.drain(t, d); st.Claimed != 0 {
		t.Fatalf("at level 0, PagerDuty claimed %d rows", st.Claimed)
	}
	b.escalate(t, id, "U0LEAD", "high")
	b.escalate(t, other, "U0LEAD", "high")
	b.escalate(t, other, "U0HEAD", "urgent")
	if st := b.drain(t, d); st.Claimed != 0 {
		t.Fatalf("at level 1, PagerDuty claimed %d rows", st.Claimed)
	}
	b.escalate(t, id, "U0HEAD", "urgent")
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("at level 2: %+v, want the trigger sent", st)
	}
	tk := b.ticket(t, id)
	if _, err := review.NewStore(b.pool, ledger.Native(), policy).Acknowledge(b.ctx, id, "slack:U0HEAD", tk.Version); err != nil {
		t.Fatal(err)
	}
	tk = b.ticket(t, id)
	if _, err := review.NewStore(b.pool, ledger.Native(), policy).Resolve(b.ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent,
		By: "slack:U0HEAD", Note: "customer jane.doe@example.com called", ExpectVersion: tk.Version}); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, d); st.Sent != 2 {
		t.Fatalf("after acknowledge and resolve: %+v, want 2 sent", st)
	}

	events := b.fake.Events()
	var actions []string
	for _, e := range events {
		actions = append(actions, e.EventAction)
		if want := pagerduty.DedupKey(id); e.DedupKey != want {
			t.Errorf("%s with dedup_key %q, want %q", e.EventAction, e.DedupKey, want)
		}
	}
	if got := strings.Join(actions, ","); got != "trigger,acknowledge,resolve" {
		t.Fatalf("PagerDuty got %s, want trigger,acknowledge,resolve", got)
	}
	in, _ := b.fake.Incident(pagerduty.DedupKey(id))
	if in.Opened != 1 || in.Status != "resolved" {
		t.Errorf("incident %+v, want one, resolved", in)
	}
	p := events[0].Payload
	if p["severity"] != "critical" || p["component"] != "mailer" || p["group"] != "payments" || p["class"] != "not_found" {
		t.Errorf("trigger payload %v: want severity critical (urgent), component mailer, group payments, class not_found", p)
	}
	raw, _ := json.Marshal(events)
	if strings.Contains(string(raw), "jane.doe") || strings.Contains(string(raw), "called") {
		t.Errorf("PagerDuty was sent the raw recipient or a note: %s", raw)
	}
	if !strings.Contains(string(raw), "j***") && !strings.Contains(string(raw), "recipient_masked") {
		t.Errorf("the trigger's details lack the masked recipient: %s", raw)
	}
	// Slack has every event of both tickets; the dispatcher of Slack's rows
	// never sees PagerDuty's.
	if got := len(b.rows(t, id, outbox.ReceiverSlack)); got != 5 {
		t.Errorf("ticket %d has %d Slack rows, want 5 (opened, 2 escalations, acknowledged, resolved)", id, got)
	}
	if got := len(b.rows(t, id, outbox.ReceiverPagerDuty)); got != 3 {
		t.Errorf("ticket %d has %d PagerDuty rows, want 3", id, got)
	}
	if got := len(b.rows(t, other, outbox.ReceiverPagerDuty)); got != 0 {
		t.Errorf("ticket %d of another workflow has %d PagerDuty rows", other, got)
	}
}

// TestRetriedTriggerIsOneIncident: an attempt whose answer is lost after
// PagerDuty processed it, a 500 and a rate limit are retried under the same
// dedup key: one incident.
func TestRetriedTriggerIsOneIncident(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
	d := b.dispatcher(t, "pd1", pagerdutyfake.RoutingKey, nil)
	id := b.open(t, "payments")
	b.fake.DropAfterProcessing()
	b.fake.Fail(http.StatusInternalServerError)
	b.fake.Fail(http.StatusTooManyRequests)
	for i := 0; i < 4; i++ {
		b.drain(t, d)
		// The rate limit's wait (30s without Retry-After) is cut short.
		if _, err := b.pool.Exec(b.ctx, `UPDATE sweeper.outbox SET lease_until = now() WHERE state = 'pending' AND leased_by IS NULL`); err != nil {
			t.Fatal(err)
		}
	}
	rows := b.rows(t, id, outbox.ReceiverPagerDuty)
	if len(rows) != 1 || rows[0].State != outbox.StateSent {
		t.Fatalf("rows %+v, want one sent", rows)
	}
	in, _ := b.fake.Incident(pagerduty.DedupKey(id))
	if in.Opened != 1 || in.Triggers != 2 || b.fake.Requests() != 4 {
		t.Errorf("incident %+v after %d requests; want one incident, two triggers processed (the lost answer's and the last), 4 requests", in, b.fake.Requests())
	}
}

// TestInvalidEventIsParked: PagerDuty's 400 parks the row with its errors;
// after the fix (the routing key), a replay sends it.
func TestInvalidEventIsParked(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
	id := b.open(t, "payments")
	st := b.drain(t, b.dispatcher(t, "pd1", "wrong-key", nil))
	rows := b.rows(t, id, outbox.ReceiverPagerDuty)
	if st.Parked != 1 || rows[0].State != outbox.StateParked || rows[0].ErrorCode != pagerduty.CodeInvalidEvent ||
		!strings.Contains(rows[0].LastError, "routing_key") {
		t.Fatalf("%+v, row %+v; want parked invalid_event naming routing_key", st, rows[0])
	}
	if _, err := outbox.NewStore(b.pool).Replay(b.ctx, rows[0].ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, b.dispatcher(t, "pd2", pagerdutyfake.RoutingKey, nil)); st.Sent != 1 {
		t.Fatalf("after the replay: %+v", st)
	}
}

// TestDownLongerThanTheLimitIsParked: a row failing for longer than
// give_up_after is parked (gave_up); a replay gives it its time again.
func TestDownLongerThanTheLimitIsParked(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
	id := b.open(t, "payments")
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	b.fake.Fail(http.StatusServiceUnavailable)
	b.fake.Fail(http.StatusServiceUnavailable)
	if st, err := b.dispatcher(t, "pd1", pagerdutyfake.RoutingKey, nil).DispatchOnce(b.ctx); err != nil || st.Failed != 1 {
		t.Fatalf("first failure: %+v, %v; want retried", st, err)
	}
	if st, err := b.dispatcher(t, "pd2", pagerdutyfake.RoutingKey, later).DispatchOnce(b.ctx); err != nil || st.Parked != 1 {
		t.Fatalf("failing for 2h with a limit of 1h: %+v, want parked", st)
	}
	row := b.rows(t, id, outbox.ReceiverPagerDuty)[0]
	if row.ErrorCode != notify.CodeGaveUp {
		t.Fatalf("row %+v, want code %s", row, notify.CodeGaveUp)
	}
	if _, err := outbox.NewStore(b.pool).Replay(b.ctx, row.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, b.dispatcher(t, "pd3", pagerdutyfake.RoutingKey, nil)); st.Sent != 1 {
		t.Fatalf("after the replay: %+v", st)
	}
}

// TestReplicasSendOnce: dispatchers racing over many tickets' rows send
// each event once.
func TestReplicasSendOnce(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
	for range 20 {
		b.open(t, "payments")
	}
	var wg sync.WaitGroup
	for i := range 3 {
		d := b.dispatcher(t, fmt.Sprintf("pd%d", i), pagerdutyfake.RoutingKey, nil)
		wg.Go(func() { _, _ = d.Drain(b.ctx) })
	}
	wg.Wait()
	if got := len(b.fake.Events()); got != 20 || b.fake.Requests() != 20 {
		t.Fatalf("%d events in %d requests, want 20 in 20", got, b.fake.Requests())
	}
}

// TestNotForPagerDutyIsSkipped: a reassignment of a ticket PagerDuty
// holds is recorded skipped, sent nowhere.
func TestNotForPagerDutyIsSkipped(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
	d := b.dispatcher(t, "pd1", pagerdutyfake.RoutingKey, nil)
	id := b.open(t, "payments")
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		VALUES ($1, $2, 'slack:U0X', $3)`, id, review.EventReassigned, fmt.Sprintf("ticket:%d:reassigned:1", id)); err != nil {
		t.Fatal(err)
	}
	st := b.drain(t, d)
	rows := b.rows(t, id, outbox.ReceiverPagerDuty)
	if st.Sent != 1 || st.Skipped != 1 || rows[1].State != outbox.StateSkipped || rows[1].ErrorCode != pagerduty.CodeNotForPagerDuty {
		t.Fatalf("%+v, rows %+v", st, rows)
	}
	if got := len(b.fake.Events()); got != 1 {
		t.Errorf("%d events, want the trigger alone", got)
	}
}

// TestRoutedTicketStaysRouted: once a ticket reached PagerDuty, its
// acknowledgement and resolution go there even when no route matches them
// any more (the routes changed meanwhile): the alert is never left open.
func TestRoutedTicketStaysRouted(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty, Workflow: "payments"}, outbox.Route{Receiver: outbox.ReceiverSlack})
	d := b.dispatcher(t, "pd1", pagerdutyfake.RoutingKey, nil)
	id := b.open(t, "payments")
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("trigger: %+v", st)
	}
	if _, err := outbox.NewRoutes(b.pool).SetRoutes(b.ctx, []outbox.Route{{Receiver: outbox.ReceiverSlack}}); err != nil {
		t.Fatal(err)
	}
	fresh := b.open(t, "payments")
	tk := b.ticket(t, id)
	if _, err := review.NewStore(b.pool, ledger.Native(), policy).Acknowledge(b.ctx, id, "slack:U0OWNER", tk.Version); err != nil {
		t.Fatal(err)
	}
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("acknowledge: %+v", st)
	}
	if got := len(b.rows(t, fresh, outbox.ReceiverPagerDuty)); got != 0 {
		t.Errorf("a ticket opened after the route was removed has %d PagerDuty rows", got)
	}
	if ev := b.fake.Events(); len(ev) != 2 || ev[1].EventAction != pagerduty.ActionAcknowledge {
		t.Errorf("events %+v, want trigger then acknowledge", ev)
	}
}

// TestSilencedTriggerComesWhenTheSilenceEnds: a routed ticket whose
// trigger a silence held reaches PagerDuty when the silence ends — the end
// of a silence is the ticket's current alert, a trigger under its dedup
// key — and a ticket that resolved meanwhile sends nothing.
func TestSilencedTriggerComesWhenTheSilenceEnds(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
	d := b.dispatcher(t, "pd1", pagerdutyfake.RoutingKey, nil)
	store := silence.NewStore(b.pool)
	s, err := store.Add(b.ctx, silence.NewSilence{Matchers: []silence.Matcher{{Name: "provider", Op: "=", Value: "mailer"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "provider migration"})
	if err != nil {
		t.Fatal(err)
	}
	id := b.open(t, "payments")
	gone := b.open(t, "payments")
	if st := b.drain(t, d); st.Silenced != 2 || st.Sent != 0 {
		t.Fatalf("during the silence: %+v, want both triggers silenced", st)
	}
	tk := b.ticket(t, gone)
	if _, err := review.NewStore(b.pool, ledger.Native(), policy).Resolve(b.ctx, review.Resolution{TicketID: gone, Outcome: review.ResolutionNotSent,
		By: "slack:U0HEAD", ExpectVersion: tk.Version}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Expire(b.ctx, s.ID, "U0OPS"); err != nil {
		t.Fatal(err)
	}
	b.drain(t, d) // releases the silence
	b.drain(t, d) // delivers what the release wrote
	var triggers []string
	for _, e := range b.fake.Events() {
		if e.EventAction == pagerduty.ActionTrigger {
			triggers = append(triggers, e.DedupKey)
		}
	}
	if len(triggers) != 1 || triggers[0] != pagerduty.DedupKey(id) {
		t.Fatalf("triggers %v after the silence, want one, of ticket %d", triggers, id)
	}
	if in, ok := b.fake.Incident(pagerduty.DedupKey(id)); !ok || in.Status != "triggered" || in.Opened != 1 {
		t.Errorf("incident %+v (%v), want one, triggered", in, ok)
	}
}

// lockedBuffer is a log's output, written by concurrent deliveries.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestOutcomesCountAsPagerDuty: the rows a PagerDuty dispatcher parks,
// skips and silences count under receiver="pagerduty", none under Slack's,
// and its log says PagerDuty refused the parked one.
func TestOutcomesCountAsPagerDuty(t *testing.T) {
	b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	tickets := review.NewReader(b.pool, ledger.Native())
	r, err := pagerduty.New(pagerduty.Config{RoutingKey: "wrong-key", URL: b.fake.URL(), Tickets: tickets, GiveUpAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d, err := notify.NewDispatcher(b.pool, r, notify.DispatcherConfig{Tickets: tickets, Muter: silence.NewStore(b.pool), ID: "pd1", Receiver: outbox.ReceiverPagerDuty,
		Metrics: m, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	id := b.open(t, "payments")
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		VALUES ($1, $2, 'slack:U0X', $3)`, id, review.EventReassigned, fmt.Sprintf("ticket:%d:reassigned:1", id)); err != nil {
		t.Fatal(err)
	}
	if _, err := silence.NewStore(b.pool).Add(b.ctx, silence.NewSilence{Matchers: []silence.Matcher{{Name: "workflow", Op: "=", Value: "refunds"}},
		EndsAt: time.Now().Add(time.Hour), CreatedBy: "U0OPS", Comment: "refunds migration"}); err != nil {
		t.Fatal(err)
	}
	b.open(t, "refunds")
	if st := b.drain(t, d); st.Parked != 1 || st.Skipped != 1 || st.Silenced != 1 {
		t.Fatalf("stats %+v, want one row parked, one skipped, one silenced", st)
	}
	for _, name := range []string{"sweeper_slack_parked_total", "sweeper_slack_skipped_total", "sweeper_slack_silenced_total"} {
		if got := metricstest.NonZero(t, reg, name); len(got) != 1 || got["receiver=pagerduty"] != 1 {
			t.Errorf("%s = %v, want 1 under receiver=pagerduty alone", name, got)
		}
	}
	if out := logs.String(); !strings.Contains(out, "PagerDuty refused the message") || strings.Contains(out, "Slack") {
		t.Errorf("log %q: want the parked row's line to name PagerDuty, and no Slack", out)
	}
}

// TestRedirectIsNeverDelivered: pagerduty.url answering 302, 307 or 308
// with a Location at PagerDuty itself never has the row recorded sent, and
// the event — the routing key in its body — never reaches the Location:
// the row is parked redirect, its error naming the status and the key to
// fix.
func TestRedirectIsNeverDelivered(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			b := setup(t, outbox.Route{Receiver: outbox.ReceiverPagerDuty})
			var asked atomic.Int32
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				http.Redirect(w, r, b.fake.URL(), status)
			}))
			t.Cleanup(redirector.Close)
			tickets := review.NewReader(b.pool, ledger.Native())
			r, err := pagerduty.New(pagerduty.Config{RoutingKey: pagerdutyfake.RoutingKey, URL: redirector.URL + "/v2/enqueue", Tickets: tickets, GiveUpAfter: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			d, err := notify.NewDispatcher(b.pool, r, notify.DispatcherConfig{Tickets: tickets, Muter: silence.NewStore(b.pool), ID: "pd1", Receiver: outbox.ReceiverPagerDuty,
				Backoff: func(int) time.Duration { return 0 }})
			if err != nil {
				t.Fatal(err)
			}
			id := b.open(t, "payments")
			st := b.drain(t, d)
			row := b.rows(t, id, outbox.ReceiverPagerDuty)[0]
			if st.Sent != 0 || st.Parked != 1 || row.State != outbox.StateParked || row.ErrorCode != notify.CodeRedirect {
				t.Fatalf("%+v, row %+v; want parked %s, never sent", st, row, notify.CodeRedirect)
			}
			for _, s := range []string{strconv.Itoa(status), "redirects are not followed", "pagerduty.url"} {
				if !strings.Contains(row.LastError, s) {
					t.Errorf("the row's error %q does not say %q", row.LastError, s)
				}
			}
			if n := b.fake.Requests(); n != 0 || asked.Load() != 1 {
				t.Errorf("the redirect's target got %d requests, pagerduty.url %d; want 0 and 1", n, asked.Load())
			}
		})
	}
}
