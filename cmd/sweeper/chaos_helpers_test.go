package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/slackfake"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// chaosPayload is the normalized payload of every seeded operation; the
// fake provider's agreeing records carry its hash.
const chaosPayload = `{"body":"your receipt","n":1}`

// chaosRecipient is every seeded operation's recipient.
const chaosRecipient = "jane.doe@example.com"

// opClass is a kind of operation the fake provider answers one way, and
// what sweeper must make of it.
type opClass struct {
	prefix string
	// status is the operation's final status; reason the ticket's, "" for
	// none; resolved says the ticket ends resolved as done (a re-lookup
	// before an escalation found the record).
	status   string
	reason   string
	resolved bool
	// transitions is the operation's whole committed status history.
	transitions []string
}

// An op_key is "<class>-<provider>-<n>": the provider is "m" for "mail",
// whose lookup_budget is a few seconds, or "p" for "pay", whose budget is
// ten minutes. Under a short budget any answer can become lookup_failed (a
// lookup slowed down past lookup_timeout by a loaded machine spends it), so
// the chaos run keeps mail for the classes that fail whatever happens.
var (
	classFound = opClass{prefix: "found", status: "done", transitions: []string{"pending>done"}}
	classNone  = opClass{prefix: "none", status: "review", reason: "not_found", transitions: []string{"pending>review"}}
	classTwo   = opClass{prefix: "two", status: "review", reason: "multiple_matches", transitions: []string{"pending>review"}}
	classMism  = opClass{prefix: "mism", status: "review", reason: "payload_mismatch", transitions: []string{"pending>review"}}
	classErr   = opClass{prefix: "err", status: "review", reason: "lookup_failed", transitions: []string{"pending>review"}}
	classDeny  = opClass{prefix: "deny", status: "review", reason: "lookup_failed", transitions: []string{"pending>review"}}
	classFlaky = opClass{prefix: "flaky", status: "done", transitions: []string{"pending>done"}}
	classLate  = opClass{prefix: "late", status: "done", reason: "not_found", resolved: true,
		transitions: []string{"pending>review", "review>done"}}
	// Under the "sms" provider, which matches by resemblance: every
	// operation has the same recipient and body, at its own time. res-* has
	// its own message inside its window; amb-* comes in pairs a minute
	// apart, with one message both windows hold.
	classRes = opClass{prefix: "res", status: "done", transitions: []string{"pending>done"}}
	classAmb = opClass{prefix: "amb", status: "review", reason: "ambiguous_owner", transitions: []string{"pending>review"}}
)

// providerOf returns the provider of op_key k.
func providerOf(k string) string {
	switch strings.Split(k, "-")[1] {
	case "m":
		return "mail"
	case "p":
		return "pay"
	case "s":
		return "sms"
	}
	panic("no provider in op_key " + k)
}

// classOf returns the class of op_key k.
func classOf(k string) opClass {
	prefix, _, _ := strings.Cut(k, "-")
	for _, c := range []opClass{classFound, classNone, classTwo, classMism, classErr, classDeny, classFlaky, classLate, classRes, classAmb} {
		if c.prefix == prefix {
			return c
		}
	}
	panic("no class for op_key " + k)
}

// fakeProvider is an httptest server speaking the http lookup protocol
// (providers/httplookup), answering by the op_key's class:
//
//	found-*  one record, payload and recipient agreeing
//	none-*   no record
//	two-*    two agreeing records
//	mism-*   one record whose payload hash differs
//	err-*    HTTP 503, always
//	deny-*   HTTP 403, always (a permanent error)
//	flaky-*  503 on the first call, 429 with Retry-After on the second, then found
//	late-*   none until [fakeProvider.Reveal] names the key, then found
//
// While stalled, every lookup waits past any lookup_timeout before it
// answers. Any request that is not a GET is counted and refused: sweeper
// never sends.
type fakeProvider struct {
	srv  *httptest.Server
	hash string

	gets, nonGets atomic.Int64
	stalled       atomic.Bool
	stall         time.Duration

	mu       sync.Mutex
	calls    map[string]int
	revealed map[string]bool
	// messages are what the resemblance endpoint (/sms) holds: found by
	// recipient and date, whatever the op_key.
	messages []smsMessage
}

// smsMessage is one message the resemblance endpoint holds.
type smsMessage struct {
	id string
	at time.Time
}

func newFakeProvider(t *testing.T, stall time.Duration) *fakeProvider {
	t.Helper()
	hash, err := ledger.PayloadHash([]byte(chaosPayload))
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProvider{hash: hash, stall: stall, calls: map[string]int{}, revealed: map[string]bool{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the lookup endpoint.
func (p *fakeProvider) URL() string { return p.srv.URL + "/lookup" }

// SMSURL is the endpoint that searches by resemblance: the messages sent
// to the recipient between since and until.
func (p *fakeProvider) SMSURL() string { return p.srv.URL + "/sms" }

// Hold adds messages for the resemblance endpoint to find.
func (p *fakeProvider) Hold(messages ...smsMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, messages...)
}

// serveSMS answers a resemblance search: every message dated inside the
// query's window, the op_key ignored, as a provider without one would.
func (p *fakeProvider) serveSMS(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	since, err1 := time.Parse(time.RFC3339, q.Get("since"))
	until, err2 := time.Parse(time.RFC3339, q.Get("until"))
	if err1 != nil || err2 != nil || q.Get("recipient") != chaosRecipient {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	var matches []map[string]string
	for _, m := range p.messages {
		if !m.at.Before(since) && !m.at.After(until) {
			matches = append(matches, map[string]string{"id": m.id, "created_at": m.at.UTC().Format(time.RFC3339),
				"recipient": chaosRecipient, "payload_hash": p.hash})
		}
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"matches": append([]map[string]string{}, matches...)})
}

// Reveal makes late-* keys answer with their record from now on.
func (p *fakeProvider) Reveal(keys ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.revealed[k] = true
	}
}

// Calls returns how many GETs asked for op_key k.
func (p *fakeProvider) Calls(k string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[k]
}

func (p *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || (r.URL.Path != "/lookup" && r.URL.Path != "/sms") {
		p.nonGets.Add(1)
		http.Error(w, "this provider only answers lookups", http.StatusMethodNotAllowed)
		return
	}
	p.gets.Add(1)
	if r.URL.Path == "/sms" {
		p.serveSMS(w, r)
		return
	}
	q := r.URL.Query()
	key := q.Get("op_key")
	p.mu.Lock()
	p.calls[key]++
	n, revealed := p.calls[key], p.revealed[key]
	p.mu.Unlock()
	if p.stalled.Load() {
		select {
		case <-time.After(p.stall):
		case <-r.Context().Done():
			return
		}
	}

	record := func(id, hash string) map[string]string {
		return map[string]string{"id": id, "created_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
			"recipient": q.Get("recipient"), "payload_hash": hash}
	}
	var matches []map[string]string
	switch prefix, _, _ := strings.Cut(key, "-"); {
	case prefix == "found" || prefix == "flaky" && n > 2 || prefix == "late" && revealed:
		matches = append(matches, record("rec-"+key, p.hash))
	case prefix == "none" || prefix == "late":
	case prefix == "two":
		matches = append(matches, record("rec-"+key+"-a", p.hash), record("rec-"+key+"-b", p.hash))
	case prefix == "mism":
		matches = append(matches, record("rec-"+key, strings.Repeat("0", 64)))
	case prefix == "flaky" && n == 2:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	case prefix == "err" || prefix == "flaky":
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
		return
	default:
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"matches": append([]map[string]string{}, matches...)})
}

// seedOps writes operations keyed keys, already stale, spread over
// workflows wf00…wf(workflows-1) in turn, each under the provider its key
// names.
//
// It returns the time the operations were first attempted at (the "sms"
// ones are spread before it: see smsTimes).
func seedOps(t *testing.T, pool *pgxpool.Pool, workflows int, keys []string) time.Time {
	t.Helper()
	hash, err := ledger.PayloadHash([]byte(chaosPayload))
	if err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, len(keys))
	at := time.Now().Add(-2 * time.Hour)
	times := smsTimes(keys, at)
	for i, k := range keys {
		first := at
		if t, ok := times[k]; ok {
			first = t
		}
		rows[i] = []any{k, fmt.Sprintf("wf%02d", i%workflows), providerOf(k), "send_email", chaosRecipient,
			hash, chaosPayload, first, first}
	}
	_, err = pool.CopyFrom(context.Background(), pgx.Identifier{"ledger", "operations"},
		[]string{"op_key", "workflow", "provider", "action", "recipient", "payload_hash", "payload", "first_attempt_at", "last_attempt_at"},
		pgx.CopyFromRows(rows))
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// smsTimes spreads the first attempts of the "sms" operations — all to
// one recipient with one body — so that each res-* window (two minutes
// before to ten after) holds no other operation, and each amb-* pair shares
// one: res-* 20 minutes apart before base, amb-* pairs 20 minutes apart
// before those, a minute between the two of a pair.
func smsTimes(keys []string, base time.Time) map[string]time.Time {
	times := map[string]time.Time{}
	res, amb := 0, 0
	for _, k := range keys {
		if classOf(k).prefix == classRes.prefix {
			times[k] = base.Add(-time.Duration(res) * 20 * time.Minute)
			res++
		}
	}
	ambBase := base.Add(-time.Duration(res+3) * 20 * time.Minute)
	for _, k := range keys {
		if classOf(k).prefix == classAmb.prefix {
			times[k] = ambBase.Add(-time.Duration(amb/2)*20*time.Minute + time.Duration(amb%2)*time.Minute)
			amb++
		}
	}
	return times
}

// smsMessages are the messages the resemblance endpoint holds for keys
// seeded at base: one for each res-* operation, 30 s into its attempt, and
// one for each amb-* pair, 30 s into the later attempt — inside both
// windows. A lone amb-* (an odd count) gets none of its own.
func smsMessages(keys []string, base time.Time) []smsMessage {
	times := smsTimes(keys, base)
	var out []smsMessage
	var pair []string
	for _, k := range keys {
		switch classOf(k).prefix {
		case classRes.prefix:
			out = append(out, smsMessage{id: "rec-" + k, at: times[k].Add(30 * time.Second)})
		case classAmb.prefix:
			if pair = append(pair, k); len(pair) == 2 {
				out = append(out, smsMessage{id: "rec-" + pair[0] + "+" + pair[1], at: times[pair[1]].Add(30 * time.Second)})
				pair = nil
			}
		}
	}
	return out
}

// recordTransitions logs every committed status change of the ledger, in
// a table of the test's own, so that each operation's whole history can be
// checked afterwards.
func recordTransitions(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		CREATE TABLE public.chaos_transitions (
			id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			op_key text NOT NULL, from_status text NOT NULL, to_status text NOT NULL,
			record_id text, at timestamptz NOT NULL DEFAULT clock_timestamp());
		CREATE FUNCTION public.chaos_log() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.status IS DISTINCT FROM OLD.status THEN
				INSERT INTO public.chaos_transitions (op_key, from_status, to_status, record_id)
				VALUES (NEW.op_key, OLD.status, NEW.status, NEW.provider_record_id);
			END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER chaos_log AFTER UPDATE ON ledger.operations
			FOR EACH ROW EXECUTE FUNCTION public.chaos_log();`)
	if err != nil {
		t.Fatal(err)
	}
}

// startDaemonEnv starts `sweeper run` with extra environment variables.
func startDaemonEnv(t *testing.T, bin, cfgFile string, environ map[string]string) *daemonProc {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", cfgFile)
	cmd.Env = os.Environ()
	for k, v := range environ {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	var logFile *os.File
	if dir := os.Getenv(envChaosLogDir); dir != "" {
		var err error
		if logFile, err = os.CreateTemp(dir, "daemon-*.log"); err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = io.MultiWriter(out, logFile)
		cmd.Stderr = cmd.Stdout
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{cmd: cmd, output: out, exited: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		if logFile != nil {
			fmt.Fprintf(logFile, "--- exit: %v\n", d.err)
			logFile.Close()
		}
		close(d.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // an error once it has exited
		<-d.exited
	})
	return d
}

// envChaosLogDir names a directory where each daemon's whole output is
// kept (daemon-*.log), for a look at what happened in a run; unset keeps
// only the last lines, shown on failure.
const envChaosLogDir = "SWEEPER_CHAOS_LOG_DIR"

// slackEnv is the environment the daemons need for Slack.
func slackEnv(dbURL string) map[string]string {
	return map[string]string{
		config.EnvDatabaseURL:  dbURL,
		config.EnvSlackToken:   slackfake.Token,
		config.EnvSlackSigning: "signing-secret",
	}
}

// waitUntil polls cond until it returns "" (done), or fails the test with
// cond's last answer and the daemons' recent output once timeout has
// passed. Every 15 seconds it logs where things stand.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() string, daemons func() string) {
	t.Helper()
	start := time.Now()
	report := start.Add(15 * time.Second)
	testwait.UntilNil(t, timeout, what, func() error {
		state := cond()
		if state == "" {
			return nil
		}
		if time.Now().After(report) {
			t.Logf("waiting %s for %s: %s", time.Since(start).Round(time.Second), what, state)
			report = report.Add(15 * time.Second)
		}
		return chaosState{state, daemons}
	})
}

// chaosState is where things stand, and the daemons' recent output, read
// only when printed.
type chaosState struct {
	state   string
	daemons func() string
}

func (s chaosState) Error() string { return s.state + "\n" + s.daemons() }

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// checkSlack checks that every ticket event, and every provider incident's
// opening and end, has exactly one message in the fake Slack, carrying its
// dedupe key, and that no message carries a key no event has; a ticket's
// reply sits in its root's thread.
func checkSlack(t *testing.T, pool *pgxpool.Pool, fake *slackfake.Server) {
	t.Helper()
	ctx := context.Background()
	events := map[string]string{} // dedupe key → kind
	rows, err := pool.Query(ctx, `SELECT dedupe_key, kind FROM sweeper.ticket_events`)
	if err != nil {
		t.Fatal(err)
	}
	var key, kind string
	if _, err := pgx.ForEachRow(rows, []any{&key, &kind}, func() error { events[key] = kind; return nil }); err != nil {
		t.Fatal(err)
	}
	// A provider the load makes fail for several operations is down for
	// the cluster: its incident's opening message and closing reply are
	// events too, one message each.
	incidents := map[string]bool{}
	rows, err = pool.Query(ctx, `SELECT 'incident:' || id || ':opened' FROM sweeper.incidents
		UNION ALL SELECT 'incident:' || id || ':closed' FROM sweeper.incidents WHERE ended_at IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&key}, func() error { incidents[key] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]slackfake.Message{}
	roots := map[string]slackfake.Message{} // ticket's "ticket:N" prefix → root
	for _, m := range fake.Messages() {
		k := m.DedupeKey()
		byKey[k] = append(byKey[k], m)
		if strings.HasSuffix(k, ":opened") {
			roots[strings.TrimSuffix(k, ":opened")] = m
		}
	}
	var problems []string
	for k, kind := range events {
		msgs := byKey[k]
		if len(msgs) != 1 {
			problems = append(problems, fmt.Sprintf("event %s (%s): %d messages", k, kind, len(msgs)))
			continue
		}
		if kind == "opened" {
			continue
		}
		parts := strings.SplitN(k, ":", 3) // ticket:N:…
		root, ok := roots[parts[0]+":"+parts[1]]
		if !ok || msgs[0].ThreadTS != root.TS || msgs[0].Channel != root.Channel {
			problems = append(problems, fmt.Sprintf("event %s: reply not in its root's thread", k))
		}
	}
	for k := range incidents {
		if n := len(byKey[k]); n != 1 {
			problems = append(problems, fmt.Sprintf("incident event %s: %d messages", k, n))
		}
	}
	for k, msgs := range byKey {
		if _, ok := events[k]; !ok && !incidents[k] {
			problems = append(problems, fmt.Sprintf("%d message(s) with dedupe key %q, which no event has", len(msgs), k))
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		t.Errorf("Slack: %d problem(s) among %d events and %d messages:\n%s", len(problems), len(events),
			len(fake.Messages()), strings.Join(problems[:min(len(problems), 30)], "\n"))
	}
}

// endLeasesOf ends the outbox leases held by the dispatcher of process
// pid, which the test has killed: what their lease_until (two minutes
// after the claim) does by itself once that time has passed, without the
// test waiting for it. A dispatcher's holder name is host-pid-random
// (notify.DefaultID); the rows are then claimable as any expired lease is.
func endLeasesOf(ctx context.Context, pool *pgxpool.Pool, pid int) error {
	_, err := pool.Exec(ctx, `UPDATE sweeper.outbox SET lease_until = now() - interval '1 second'
		WHERE state = 'pending' AND lease_until > now() AND leased_by LIKE '%-' || $1::text || '-________'`, strconv.Itoa(pid))
	if err != nil {
		return fmt.Errorf("end the outbox leases of killed process %d: %w", pid, err)
	}
	return nil
}
