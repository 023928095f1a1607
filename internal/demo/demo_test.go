package demo

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/dbtest"
	"github.com/sweeper/sweeper/internal/slackfake"
)

var (
	demoDatabaseLine = regexp.MustCompile(`(?m)^  database: +(sweeper_demo_[0-9a-f]+) `)
	demoOpsLine      = regexp.MustCompile(`(?m)^  operations: (\d+) seeded: (\d+) done, (\d+) review, (\d+) failed, (\d+) pending$`)
	demoEscalations  = regexp.MustCompile(`(?m)^  escalations: (\d+),`)
	demoSlackLine    = regexp.MustCompile(`(?m)^  slack: (\d+) messages posted \((\d+) root messages, (\d+) thread replies\)`)
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

// TestDemo runs `sweeper demo` against the tests' server and checks that
// it reaches its summary with every seeded operation settled as the
// simulated providers dictate, at least one escalation, Slack messages,
// no raw recipient anywhere, and its database gone afterwards.
func TestDemo(t *testing.T) {
	skipLong(t)
	t.Parallel()
	const ops = 30
	server := dbtest.ServerURL(t)
	start := time.Now()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), Options{Ops: ops, Timeout: 3 * time.Minute, Stdout: &stdout, Stderr: &stderr,
		Getenv: func(name string) string {
			if name == config.EnvDatabaseURL {
				return server
			}
			return ""
		}})
	r := struct {
		code           int
		stdout, stderr string
	}{code, stdout.String(), stderr.String()}
	t.Logf("demo took %s", time.Since(start).Round(time.Millisecond))
	if r.code != exitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
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
	if seeded != ops || done+inReview+failed != ops || pending != 0 {
		t.Errorf("summary %q: want %d seeded, all settled, none pending", m[0], ops)
	}
	wantDone := 0
	for _, op := range demoPlan(ops) {
		if op.scenario == scenarioFound {
			wantDone++
		}
	}
	if done != wantDone || inReview != ops-wantDone {
		t.Errorf("summary %q: want %d done (one matching record each) and %d in review", m[0], wantDone, ops-wantDone)
	}
	if got := strings.Count(r.stdout, "  done     "); got != done {
		t.Errorf("%d done lines, summary says %d", got, done)
	}
	if got := strings.Count(r.stdout, "  ticket   #"); got != inReview {
		t.Errorf("%d ticket lines, summary says %d operations in review", got, inReview)
	}

	if m := demoEscalations.FindStringSubmatch(r.stdout); m == nil || m[1] == "0" {
		t.Errorf("no escalation in the summary:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)  escalate #\d+ .*escalated to level 1: owner @U0OPSLEAD`).MatchString(r.stdout) {
		t.Errorf("no escalation to the next owner among the events:\n%s", r.stdout)
	}
	if m := demoSlackLine.FindStringSubmatch(r.stdout); m == nil || m[2] != strconv.Itoa(inReview) || m[3] == "0" {
		t.Errorf("slack summary %q: want one root message per ticket (%d) and thread replies", m, inReview)
	}
	if !strings.Contains(r.stdout, "thread reply, also to the channel: 🔺 Escalated from level 0 to level 1: @U0OPSLEAD") {
		t.Errorf("the escalation's Slack reply is not shown as text:\n%s", r.stdout)
	}

	for _, op := range demoPlan(ops) {
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
