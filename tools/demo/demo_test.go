package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/pgtemp"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

var (
	demoDatabaseLine = regexp.MustCompile(`(?m)^  database: +(sweeper_demo_[0-9a-f]+) `)
	demoOpsLine      = regexp.MustCompile(`(?m)^  operations: (\d+) seeded: (\d+) done, (\d+) review, (\d+) failed, (\d+) pending$`)
	demoEscalations  = regexp.MustCompile(`(?m)^  escalations: (\d+),`)
	demoSlackLine    = regexp.MustCompile(`(?m)^  slack: (\d+) messages posted \((\d+) root messages, (\d+) thread replies\)`)
	demoIncidents    = regexp.MustCompile(`(?m)^  incidents: (\d+) \(([^)]*)\)`)
	demoSelfSettled  = regexp.MustCompile(`(?m)^  settled by themselves: (\d+) ticket`)
	demoAudits       = regexp.MustCompile(`(?m)^  audit: (\d+) ticket\(s\) \(([^)]*)\)`)
	demoRoots        = regexp.MustCompile(`(?m)^  root Slack messages: (\d+) for (\d+) tickets opened \((\d+) ticket alerts, (\d+) alert group\(s\) holding (\d+) tickets, (\d+) incident\(s\)\)$`)
	// An address or phone number as the demo seeds them, unmasked.
	rawRecipient = regexp.MustCompile(`[a-z]+\.\d+@example\.(com|org|net)|\+1555\d{7}`)
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// skipLong skips a test that runs the whole daemon for seconds under -short.
func skipLong(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long process test: not under -short")
	}
}

// TestDemo runs `sweeper demo` against a server of its own and checks that
// it reaches its summary with every seeded operation settled as the
// simulated providers dictate, at least one escalation, Slack messages,
// the audit's duplicate_effect ticket for the operation its workflow marked
// done with two records at the provider, no raw recipient anywhere, and its database gone afterwards; and that it
// tells the least-toil story (testDemoStory).
func TestDemo(t *testing.T) {
	skipLong(t)
	t.Parallel()
	server := ownServer(t)
	// One after the other: the story's outage is timed in seconds, and two
	// daemons at once on a loaded machine blur it.
	for _, adopt := range []bool{false, true} {
		t.Run(fmt.Sprintf("adopt=%t", adopt), func(t *testing.T) { testDemo(t, server, adopt) })
	}
}

// ownServer starts a throwaway PostgreSQL cluster for the test and returns
// its URL, as SWEEPER_DATABASE_URL: the demo's daemon and watch run beside
// every other package's tests, and on a cluster of their own their
// connections do not count against the shared server's limit.
func ownServer(t *testing.T) string {
	t.Helper()
	cluster, err := pgtemp.Start(context.Background())
	if err != nil {
		t.Fatalf("a PostgreSQL cluster of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	return cluster.URL
}

// testDemo is [TestDemo] on ledger.operations, or with adopt on the log
// table of the workflows' own that `sweeper demo --adopt` maps: the same
// story either way.
func testDemo(t *testing.T, server string, adopt bool) {
	const ops = 30
	start := time.Now()
	var stdout, stderr bytes.Buffer
	var page struct {
		code int
		body string
		err  error
	}
	code := Run(context.Background(), Options{Ops: ops, Timeout: 3 * time.Minute, Adopt: adopt, Stdout: &stdout, Stderr: &stderr,
		Getenv: func(name string) string {
			if name == config.EnvDatabaseURL {
				return server
			}
			return ""
		},
		// The page is open while the demo runs, signed in as its reviewer.
		OnReviewPage: func(url string) {
			resp, err := http.Get(url)
			if err != nil {
				page.err = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			page.code, page.body, page.err = resp.StatusCode, string(b), err
		}})
	if page.err != nil || page.code != http.StatusOK || !strings.Contains(page.body, "signed in as <code>"+demoReviewer) {
		t.Errorf("the demo's review page: %d %v\n%.500s", page.code, page.err, page.body)
	}
	if rawRecipient.MatchString(page.body) {
		t.Errorf("the demo's review page shows a raw recipient")
	}
	r := struct {
		code           int
		stdout, stderr string
	}{code, stdout.String(), stderr.String()}
	t.Logf("demo took %s", time.Since(start).Round(time.Millisecond))
	if r.code != exitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	if got := strings.Contains(r.stdout, "  ledger:     public.outbound_log ("); got != adopt {
		t.Errorf("the demo names the adopted table: %t, want %t", got, adopt)
	}
	m := demoOpsLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no summary of the operations in the output:\n%s", r.stdout)
	}
	n := make([]int, len(m)-1)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	seeded, done, inReview, failed, pending := n[0], n[1], n[2], n[3], n[4]
	plan := demoPlan(ops)
	if seeded != len(plan) || done+inReview+failed != len(plan) || pending != 0 {
		t.Errorf("summary %q: want %d seeded, all settled, none pending", m[0], len(plan))
	}
	wantDone, lagging, doneTwice := 0, 0, 0
	var doneTwiceKey string
	for _, op := range plan {
		switch op.scenario {
		case scenarioFound:
			wantDone++
		case scenarioLagging:
			lagging++
		case scenarioDoneTwice:
			doneTwice++
			doneTwiceKey = op.attempt.OpKey
		}
	}
	if doneTwice != 1 {
		t.Fatalf("the plan holds %d operations done twice, want 1", doneTwice)
	}
	// The operation done twice stays done: the audit never writes the
	// ledger.
	if done != wantDone+lagging+doneTwice || inReview != ops-wantDone-lagging {
		t.Errorf("summary %q: want %d done (one matching record each, %d of them found late, and %d its workflow marked done) and %d in review",
			m[0], wantDone+lagging+doneTwice, lagging, doneTwice, ops-wantDone-lagging)
	}
	// Sweeper settles the pending ones; the one its workflow marked done is
	// not sweeper's to announce.
	if got := strings.Count(r.stdout, "  done     "); got != done-doneTwice {
		t.Errorf("%d done lines, want the summary's %d but the %d its workflow marked done", got, done, doneTwice)
	}
	audit := regexp.MustCompile(`(?m)^ +[0-9.]+s  audit    #\d+ (\S+) .*: duplicate_effect: 2 record\(s\) .*; owner @\w+`).FindAllStringSubmatch(r.stdout, -1)
	if len(audit) != 1 || audit[0][1] != doneTwiceKey {
		t.Errorf("audit lines %q: want one duplicate_effect ticket, for %s:\n%s", audit, doneTwiceKey, r.stdout)
	}
	if m := demoAudits.FindStringSubmatch(r.stdout); m == nil || m[1] != "1" || m[2] != "duplicate_effect 1" {
		t.Errorf("audit summary %q: want 1 ticket, duplicate_effect", m)
	}
	// A ticket for every operation in review, and one for every lagging
	// operation, which its re-lookup resolved.
	if got := len(regexp.MustCompile(`(?m)^ +[0-9.]+s  ticket   #\d+ opened for `).FindAllString(r.stdout, -1)); got != inReview+lagging {
		t.Errorf("%d ticket lines, want %d: the summary's %d operations in review and %d lagging ones", got, inReview+lagging, inReview, lagging)
	}

	if m := demoEscalations.FindStringSubmatch(r.stdout); m == nil || m[1] == "0" {
		t.Errorf("no escalation in the summary:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)  escalate #\d+ .*escalated to level 1: owner @U0OPSLEAD`).MatchString(r.stdout) {
		t.Errorf("no escalation to the next owner among the events:\n%s", r.stdout)
	}
	testDemoStory(t, r.stdout, plan, inReview+lagging+doneTwice, lagging)
	if !strings.Contains(r.stdout, "thread reply, also to the channel: 🔺 Escalated from level 0 to level 1: @U0OPSLEAD") {
		t.Errorf("the escalation's Slack reply is not shown as text:\n%s", r.stdout)
	}

	for _, op := range plan {
		if strings.Contains(r.stdout+r.stderr, op.attempt.Recipient) {
			t.Errorf("raw recipient %s in the output", op.attempt.Recipient)
		}
	}
	if raw := rawRecipient.FindString(r.stdout + r.stderr); raw != "" {
		t.Errorf("raw recipient %s in the output", raw)
	}
	if strings.Contains(r.stdout+r.stderr, slackfake.Token) {
		t.Error("the Slack token is in the output")
	}
	if strings.Contains(r.stderr, "level=ERROR") {
		t.Errorf("the daemon logged errors:\n%s", r.stderr)
	}

	db := demoDatabaseLine.FindStringSubmatch(r.stdout)
	if db == nil {
		t.Fatalf("the output does not name the demo's database:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "dropped database "+db[1]) {
		t.Errorf("the output does not say %s was dropped", db[1])
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, db[1]).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after the demo", db[1])
	}
}

// testDemoStory checks the least-toil story in the demo's output: the
// outage provider down, exactly one incident message for it, nothing
// decided for its operations until it is back, then its operations settled
// with no lookup_failed ticket and the incident message edited; the
// lagging operations' tickets resolved by a re-lookup, each with its own
// root message edited and no second one; an alert group; and a summary
// whose root messages add up.
func testDemoStory(t *testing.T, stdout string, plan []demoOp, tickets, lagging int) {
	t.Helper()
	down := lineIndex(stdout, `  down     `+demoOutageProvider+` is down for the whole cluster`)
	up := lineIndex(stdout, `  up       `+demoOutageProvider+` answered a probe`)
	if down < 0 || up < down {
		t.Fatalf("want %s down, then up again (lines %d, %d):\n%s", demoOutageProvider, down, up, stdout)
	}
	incident := regexp.MustCompile(`(?m)^ +[0-9.]+s  slack    #\w+ posted: 🚨 ` + demoOutageProvider + ` unreachable since `)
	if got := len(incident.FindAllString(stdout, -1)); got != 1 {
		t.Errorf("%d incident messages for %s, want exactly 1", got, demoOutageProvider)
	}
	if at := lineIndex(stdout, `message edited: ✅ `+demoOutageProvider+` was unreachable from `); at < up {
		t.Errorf("the incident message is not edited to say %s is back, after it is (line %d, up at %d)", demoOutageProvider, at, up)
	}
	if lineIndex(stdout, `thread reply: Back after `) < up {
		t.Errorf("no \"Back after\" reply in the incident's thread")
	}
	// The reply, posted as the backlog starts to settle, is edited with the
	// root until it shows the final counts.
	backAfter := regexp.MustCompile(`(?m)^ +[0-9.]+s  slack    #\w+ (?:thread reply|message edited): (Back after .*)$`).FindAllStringSubmatch(stdout, -1)
	if n := len(backAfter); n == 0 || !regexp.MustCompile(`^Back after [0-9hms.]+: [0-9,]+ settled, [0-9,]+ need review\.$`).MatchString(backAfter[n-1][1]) {
		t.Errorf("the incident's closing reply does not end at the final counts: %q", backAfter)
	}
	outageOps := 0
	for _, op := range plan {
		if op.attempt.Provider != demoOutageProvider {
			continue
		}
		outageOps++
		key := op.attempt.OpKey
		decided := lineIndex(stdout, `  done     `+key+` `)
		if op.scenario != scenarioFound {
			decided = lineIndex(stdout, `  review   `+key+` `)
		}
		if decided < up {
			t.Errorf("%s (%s): decided at line %d, want after %s is back (line %d)", key, op.scenario, decided, demoOutageProvider, up)
		}
		if regexp.MustCompile(`  review   ` + regexp.QuoteMeta(key) + ` .*: lookup_failed: `).MatchString(stdout) {
			t.Errorf("%s: a lookup_failed ticket, want none: the outage spent no budget", key)
		}
	}
	if outageOps == 0 {
		t.Fatalf("the plan has no operation of %s", demoOutageProvider)
	}

	resolved := regexp.MustCompile(`(?m)^ +[0-9.]+s  resolved #(\d+) (\S+) settled by itself: `).FindAllStringSubmatch(stdout, -1)
	if len(resolved) != lagging || lagging == 0 {
		t.Errorf("%d tickets settled by themselves, want the %d lagging operations'", len(resolved), lagging)
	}
	for _, m := range resolved {
		id := regexp.QuoteMeta(m[1])
		posted := regexp.MustCompile(`(?m)^ +[0-9.]+s  slack    #\w+ posted: .*review ticket #` + id + ` · `)
		if got := len(posted.FindAllString(stdout, -1)); got != 1 {
			t.Errorf("ticket #%s (%s): %d root messages, want 1", m[1], m[2], got)
		}
		at := lineIndex(stdout, "  resolved #"+m[1]+" ")
		if edited := lineIndex(stdout, "message edited: ✅ Resolved · review ticket #"+m[1]+" · done"); edited < at {
			t.Errorf("ticket #%s (%s): its root message is not edited to resolved after the re-lookup (lines %d, %d)", m[1], m[2], at, edited)
		}
	}

	m := demoIncidents.FindStringSubmatch(stdout)
	if m == nil || m[1] != "1" || !regexp.MustCompile(`^`+demoOutageProvider+` down for [0-9.]+s$`).MatchString(m[2]) {
		t.Errorf("incidents summary %q: want 1, %s down for some seconds", m, demoOutageProvider)
	}
	if m := demoSelfSettled.FindStringSubmatch(stdout); m == nil || m[1] != strconv.Itoa(lagging) {
		t.Errorf("settled-by-themselves summary %q: want %d", m, lagging)
	}
	roots := demoRoots.FindStringSubmatch(stdout)
	if roots == nil {
		t.Fatalf("no summary of root messages:\n%s", stdout)
	}
	n := make([]int, len(roots)-1)
	for i := range n {
		n[i], _ = strconv.Atoi(roots[i+1])
	}
	all, opened, alerts, groups, grouped, incidents := n[0], n[1], n[2], n[3], n[4], n[5]
	if opened != tickets || alerts != opened-grouped || all != alerts+groups+incidents || incidents != 1 {
		t.Errorf("root messages %q: want one per ticket (%d) but those in a group, one per group, one incident", roots[0], tickets)
	}
	if groups == 0 || grouped < 3 {
		t.Errorf("root messages %q: want an alert group of at least 3 tickets", roots[0])
	}
	if slack := demoSlackLine.FindStringSubmatch(stdout); slack == nil || slack[2] != roots[1] || slack[3] == "0" {
		t.Errorf("slack summary %q: want the %s root messages and thread replies", slack, roots[1])
	}
}

// lineIndex is the number of the first line of s holding sub, or -1.
func lineIndex(s, sub string) int {
	for i, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return i
		}
	}
	return -1
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc, mrkdwn, want string
	}{
		{desc: "a masked recipient in code keeps its asterisks", mrkdwn: "*Recipient* `j***@***.com`", want: "Recipient j***@***.com"},
		{desc: "a mention", mrkdwn: "Owner <@U0ANNA>", want: "Owner @U0ANNA"},
		{desc: "a link by its label", mrkdwn: "see <https://example.com/x|the runbook>", want: "see the runbook"},
		{desc: "line breaks and a quote", mrkdwn: "*Why:* no record\n>the provider was searched", want: "Why: no record — the provider was searched"},
		{desc: "entities", mrkdwn: "a &lt;b&gt; &amp; c", want: "a <b> & c"},
		{desc: "underscores stay", mrkdwn: "*op_key* `order-1-receipt`", want: "op_key order-1-receipt"},
		{desc: "emoji codes", mrkdwn: ":rotating_light: *acme* down", want: "🚨 acme down"},
	}
	for _, tt := range tests {
		if got := plainText(tt.mrkdwn); got != tt.want {
			t.Errorf("%s: plainText(%q) = %q, want %q", tt.desc, tt.mrkdwn, got, tt.want)
		}
	}
	// Dates become local clock times.
	at := time.Date(2026, 11, 29, 10, 0, 3, 0, time.UTC)
	got := plainText("deadline <!date^1764410403^{date_short_pretty} {time}|" + at.Format(time.RFC3339) + ">")
	if want := "deadline " + at.Local().Format("15:04:05"); got != want {
		t.Errorf("date: got %q, want %q", got, want)
	}
}

// watchWriter keeps what is written and closes seen the first time it
// holds want.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestDemoKeep: with --keep the demo prints its summary, then keeps the
// review page serving until it is interrupted, and cleans up after.
func TestDemoKeep(t *testing.T) {
	skipLong(t)
	t.Parallel()
	server := ownServer(t)
	stdout := &watchWriter{want: "keep running (--keep)", seen: make(chan struct{})}
	var stderr bytes.Buffer
	var url string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Options{Ops: MinOps, Timeout: 3 * time.Minute, Keep: true, Stdout: stdout, Stderr: &stderr,
			Getenv: func(name string) string {
				if name == config.EnvDatabaseURL {
					return server
				}
				return ""
			},
			OnReviewPage: func(u string) { url = u }})
	}()
	select {
	case <-stdout.seen:
	case code := <-done:
		t.Fatalf("demo --keep exited %d before keeping:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "summary after") {
		t.Errorf("the summary is not printed before the demo keeps running:\n%s", stdout.String())
	}
	resp, err := http.Get(url + "?view=resolved")
	if err != nil {
		t.Fatalf("the review page after the summary: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `href="/review/tickets/`) {
		t.Errorf("the review page after the summary: %d\n%.500s", resp.StatusCode, body)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("demo --keep interrupted after its summary: exit %d, want 0\n%s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "dropped database ") || strings.Count(out, "summary after") != 1 {
		t.Errorf("demo --keep did not clean up once, with one summary:\n%s", out)
	}
}
