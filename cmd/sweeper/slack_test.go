package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// TestSlackEndToEnd drives the review queue through the CLI against a fake
// of the Slack Web API: sweep opens tickets and posts one root message
// each; a second sweep posts nothing; escalation edits the roots and adds a
// broadcast thread reply; a resolution from the CLI edits the root to its
// final state with a reply. Every message exactly once, and no raw
// recipient anywhere in Slack.
func TestSlackEndToEnd(t *testing.T) {
	t.Parallel()
	fake := slackfake.New(t)
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, daemonConfig+fmt.Sprintf(`
[slack]
channel = "C0REVIEW01"
api_url = %q
`, fake.URL())+`
[[review.escalation]]
owner = "U0SECOND01"
priority = "high"
window = "4h"
`)
	environ := map[string]string{
		config.EnvDatabaseURL:  dbURL,
		config.EnvSlackToken:   slackfake.Token,
		config.EnvSlackSigning: "signing-secret",
	}
	seed(t, dbURL, "found-s1", "many-s2", "nf-s3")

	r := runCLI(t, environ, "sweep", "--once", "--config", cfgFile)
	if r.code != exitOK {
		t.Fatalf("sweep --once: %d\n%s", r.code, r.stderr)
	}
	roots := fake.Messages()
	if len(roots) != 2 {
		t.Fatalf("%d messages after the sweep, want 2 (one per ticket)\n%s\n%s", len(roots), r.stdout, r.stderr)
	}
	for _, m := range roots {
		if (m.ThreadTS != "" && m.ThreadTS != m.TS) || !strings.HasSuffix(m.DedupeKey(), ":opened") {
			t.Errorf("root message %s %q", m.TS, m.Text)
		}
	}
	if r := runCLI(t, environ, "sweep", "--once", "--config", cfgFile); r.code != exitOK || len(fake.Messages()) != 2 {
		t.Fatalf("second sweep: code %d, %d messages", r.code, len(fake.Messages()))
	}
	if r := runCLI(t, environ, "notify", "--once", "--config", cfgFile); r.code != exitOK || len(fake.Messages()) != 2 {
		t.Fatalf("notify --once with nothing pending: code %d, %d messages\n%s", r.code, len(fake.Messages()), r.stderr)
	}

	pool := dbtest.Pool(t, dbURL)
	if err := execAsSweeper(context.Background(), pool, `UPDATE sweeper.tickets SET deadline = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, environ, "escalate", "--once", "--config", cfgFile); r.code != exitOK {
		t.Fatalf("escalate --once: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	msgs := fake.Messages()
	replies := 0
	for _, m := range msgs {
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			replies++
			if !m.Broadcast || !strings.Contains(m.Text+string(m.Blocks), "U0SECOND01") {
				t.Errorf("escalation reply not broadcast or not mentioning the new owner: %q", m.Text)
			}
		} else if m.Edits == 0 {
			t.Errorf("root %s not edited after the escalation", m.TS)
		}
	}
	if len(msgs) != 4 || replies != 2 {
		t.Fatalf("%d messages, %d replies after escalation; want 4 and 2", len(msgs), replies)
	}

	r = runCLI(t, environ, "tickets", "list", "--json", "--config", cfgFile)
	var tickets []struct {
		ID    int64  `json:"id"`
		OpKey string `json:"op_key"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &tickets); err != nil || len(tickets) != 2 {
		t.Fatalf("tickets list: %v\n%s", err, r.stdout)
	}
	id := fmt.Sprint(tickets[0].ID)
	if r := runCLI(t, environ, "tickets", "resolve", id, "--outcome", "not_sent", "--by", "ops-alice", "--note", "checked the provider", "--config", cfgFile); r.code != exitOK {
		t.Fatalf("tickets resolve: %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, environ, "notify", "--once", "--config", cfgFile); r.code != exitOK {
		t.Fatalf("notify --once: %d\n%s", r.code, r.stderr)
	}
	if n := len(fake.Messages()); n != 5 {
		t.Errorf("%d messages after the resolution, want 5 (one reply more)", n)
	}
	r = runCLI(t, environ, "outbox", "list", "--json", "--config", cfgFile)
	var rows []struct {
		State string `json:"state"`
		TS    string `json:"ts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("outbox list: %v\n%s", err, r.stdout)
	}
	for _, row := range rows {
		if row.State != "sent" || row.TS == "" {
			t.Errorf("outbox row %+v not sent", row)
		}
	}
	for _, m := range fake.Messages() {
		if strings.Contains(m.Text+string(m.Blocks), "jane.doe@example.com") {
			t.Errorf("a raw recipient reached Slack: %s", m.Text)
		}
	}
}
