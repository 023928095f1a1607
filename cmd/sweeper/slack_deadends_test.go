package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// slackCase is a database, a fake Slack and a configuration for driving
// the review alerts through the CLI.
type slackCase struct {
	fake    *slackfake.Server
	pool    *pgxpool.Pool
	environ map[string]string
	cfg     string
}

// deadEndConfig is daemonConfig with Slack on channel and one escalation
// level, to U0SECOND01.
func deadEndConfig(t *testing.T, fake *slackfake.Server, channel string) string {
	t.Helper()
	return writeConfig(t, daemonConfig+fmt.Sprintf(`
[slack]
channel = %q
api_url = %q
`, channel, fake.URL())+`
[[review.escalation]]
owner = "U0SECOND01"
priority = "high"
window = "4h"
`)
}

func newSlackCase(t *testing.T, keys ...string) *slackCase {
	t.Helper()
	fake := slackfake.New(t)
	dbURL := dbtest.NewDatabase(t)
	seed(t, dbURL, keys...)
	return &slackCase{
		fake: fake,
		pool: dbtest.Pool(t, dbURL),
		environ: map[string]string{
			config.EnvDatabaseURL:  dbURL,
			config.EnvSlackToken:   slackfake.Token,
			config.EnvSlackSigning: "signing-secret",
		},
		cfg: deadEndConfig(t, fake, "C0REVIEW01"),
	}
}

func (c *slackCase) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCLI(t, c.environ, append(args, "--config", c.cfg)...)
}

// mustRun runs a command that must exit with code.
func (c *slackCase) mustRun(t *testing.T, code int, args ...string) result {
	t.Helper()
	r := c.run(t, args...)
	if r.code != code {
		t.Fatalf("sweeper %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// escalate passes every open ticket's deadline and runs escalate --once:
// each ticket moves to U0SECOND01.
func (c *slackCase) escalate(t *testing.T) {
	t.Helper()
	if err := execAsSweeper(context.Background(), c.pool, `UPDATE sweeper.tickets SET deadline = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, exitOK, "escalate", "--once")
}

// waitDue waits until no outbox row waits for a retry.
func (c *slackCase) waitDue(t *testing.T) {
	t.Helper()
	testwait.UntilNil(t, time.Minute, "no outbox row waiting for a retry", func() error {
		var waiting int
		if err := c.pool.QueryRow(context.Background(), `SELECT count(*) FROM sweeper.outbox
			WHERE state = 'pending' AND lease_until > now()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return fmt.Errorf("%d outbox rows still wait for a retry", waiting)
		}
		return nil
	})
}

// rowID is the id of the outbox row of the ticket of opKey and event kind.
func (c *slackCase) rowID(t *testing.T, opKey, kind string) string {
	t.Helper()
	var id int64
	err := c.pool.QueryRow(context.Background(), `SELECT o.id FROM sweeper.outbox o JOIN sweeper.tickets k ON k.id = o.ticket_id
		WHERE k.op_key = $1 AND o.kind = $2 ORDER BY o.id LIMIT 1`, opKey, kind).Scan(&id)
	if err != nil {
		t.Fatalf("outbox row %s of %s: %v", kind, opKey, err)
	}
	return fmt.Sprint(id)
}

// requireDelivered checks how it ends: no outbox row pending; every event's
// message in Slack exactly once (a root a person deleted excepted), each
// reply in the thread of a root of its ticket; and each ticket's owner,
// U0SECOND01 after the escalation, mentioned in its escalation's message.
func (c *slackCase) requireDelivered(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	rows, err := c.pool.Query(ctx, `SELECT o.dedupe_key, o.kind, o.state, o.removed_at IS NOT NULL, k.owner
		FROM sweeper.outbox o JOIN sweeper.tickets k ON k.id = o.ticket_id ORDER BY o.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	roots := map[string]bool{}
	for _, m := range c.fake.Messages() {
		if m.ThreadTS == "" || m.ThreadTS == m.TS {
			roots[m.TS] = true
		}
	}
	escalations := 0
	for rows.Next() {
		var key, kind, state, owner string
		var removed bool
		if err := rows.Scan(&key, &kind, &state, &removed, &owner); err != nil {
			t.Fatal(err)
		}
		msgs := c.fake.WithKey(key)
		switch {
		case state == "pending":
			t.Errorf("%s still pending", key)
		case removed && len(msgs) == 0, state == "dismissed" && len(msgs) == 0:
			continue // deleted in Slack by a person; closed by one
		case state != "sent" || len(msgs) != 1:
			t.Errorf("%s: %s with %d messages in Slack, want sent with exactly 1", key, state, len(msgs))
			continue
		}
		m := msgs[0]
		if m.ThreadTS != "" && m.ThreadTS != m.TS && !roots[m.ThreadTS] {
			t.Errorf("%s: a reply in thread %s, which is no root in Slack", key, m.ThreadTS)
		}
		if kind == "escalated" {
			escalations++
			if !strings.Contains(m.Text+string(m.Blocks), "<@"+owner+">") || owner != "U0SECOND01" {
				t.Errorf("%s: the new owner %s is not told: %q", key, owner, m.Text)
			}
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if escalations == 0 {
		t.Error("no escalation delivered")
	}
}

// TestSlackDeadEnds drives the review alerts through the CLI into a fake
// Slack in the situations that used to leave an alert stuck or a fix that
// did not fix: each ends with every event's message in Slack once, nothing
// pending, and the ticket's new owner told.
func TestSlackDeadEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		keys []string
		// before runs before the first sweep; between, after it and before
		// the escalation; after, after the escalation.
		before, between, after func(t *testing.T, c *slackCase)
	}{
		{
			desc: "a dropped post in a busy channel",
			keys: []string{"nf-busy"},
			before: func(t *testing.T, c *slackCase) {
				c.fake.Inject("chat.postMessage", slackfake.Fault{Drop: true})
			},
			between: func(t *testing.T, c *slackCase) {
				// 4,200 messages later, the search still finds the post at once.
				c.fake.Advance(10 * time.Minute)
				for i := range 4200 {
					c.fake.Add(slackfake.Message{Channel: "C0REVIEW01", Text: fmt.Sprintf("chatter %d", i)})
				}
				c.waitDue(t)
				r := c.mustRun(t, exitOK, "notify", "--once", "--json")
				var st struct {
					Adopted int `json:"adopted"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Adopted != 1 {
					t.Fatalf("notify --once: %s (%v), want one adopted", r.stdout, err)
				}
				if n := len(c.fake.Calls("conversations.history")); n != 1 {
					t.Errorf("%d history pages read, want 1", n)
				}
			},
		},
		{
			desc: "a root deleted in Slack",
			keys: []string{"nf-deleted"},
			between: func(t *testing.T, c *slackCase) {
				root := c.fake.Messages()[0]
				if !c.fake.Delete(root.Channel, root.TS) {
					t.Fatal("no root to delete")
				}
			},
			after: func(t *testing.T, c *slackCase) {
				r := c.mustRun(t, exitOK, "outbox", "list", "--state", "all", "--json")
				if !strings.Contains(r.stdout, `"removed_at"`) {
					t.Errorf("the deleted root is not marked removed:\n%s", r.stdout)
				}
			},
		},
		{
			desc: "a channel fixed after parking",
			keys: []string{"nf-fixed-1", "nf-fixed-2"},
			before: func(t *testing.T, c *slackCase) {
				c.fake.DeleteChannel("C0GONE01")
				c.cfg = deadEndConfig(t, c.fake, "C0GONE01")
			},
			after: func(t *testing.T, c *slackCase) {
				if r := c.mustRun(t, exitOK, "outbox", "list", "--state", "parked"); !strings.Contains(r.stdout, "channel_not_found") {
					t.Fatalf("parked rows:\n%s", r.stdout)
				}
				c.cfg = deadEndConfig(t, c.fake, "C0REVIEW01") // slack.channel corrected
				r := c.mustRun(t, exitOK, "outbox", "replay", c.rowID(t, "nf-fixed-1", "opened"), c.rowID(t, "nf-fixed-2", "opened"), "--by", "ops-alice")
				if got := strings.Count(r.stdout, "pending again"); got != 2 {
					t.Errorf("replay said:\n%s", r.stdout)
				}
				c.mustRun(t, exitOK, "notify", "--once")
				for _, m := range c.fake.Messages() {
					if m.Channel != "C0REVIEW01" {
						t.Errorf("message %s in %s, want the corrected channel", m.TS, m.Channel)
					}
				}
			},
		},
		{
			desc: "ok without a ts",
			keys: []string{"nf-nots"},
			before: func(t *testing.T, c *slackCase) {
				c.fake.Inject("chat.postMessage", slackfake.Fault{Apply: true, Omit: []string{"ts", "message"}})
			},
			between: func(t *testing.T, c *slackCase) {
				var ts string
				if err := c.pool.QueryRow(context.Background(), `SELECT coalesce(ts, '') FROM sweeper.outbox`).Scan(&ts); err != nil || ts != "" {
					t.Fatalf("the root is recorded at ts %q (%v) though Slack gave none", ts, err)
				}
				c.waitDue(t)
				c.mustRun(t, exitOK, "notify", "--once")
			},
		},
		{
			desc: "a revoked token",
			keys: []string{"nf-revoked-1", "nf-revoked-2"},
			before: func(t *testing.T, c *slackCase) {
				c.fake.Revoke(slackfake.Token)
			},
			after: func(t *testing.T, c *slackCase) {
				c.fake.Accept("xoxb-slackfake-reissued")
				c.environ[config.EnvSlackToken] = "xoxb-slackfake-reissued"
				r := c.mustRun(t, exitOK, "outbox", "replay", "--all-parked", "--error", "token_revoked", "--by", "ops-alice")
				if !strings.Contains(r.stderr, "2 row(s) replayed") {
					t.Errorf("replay said:\n%s%s", r.stdout, r.stderr)
				}
				c.mustRun(t, exitOK, "notify", "--once")
			},
		},
		{
			desc: "a root refused for good, dismissed",
			keys: []string{"nf-dismissed"},
			before: func(t *testing.T, c *slackCase) {
				c.fake.Inject("chat.postMessage", slackfake.Fault{Error: "msg_too_long"})
			},
			between: func(t *testing.T, c *slackCase) {
				id := c.rowID(t, "nf-dismissed", "opened")
				c.mustRun(t, exitOK, "outbox", "dismiss", id, "--by", "ops-alice", "--note", "the escalation carries it")
				r := c.mustRun(t, exitOK, "outbox", "list", "--state", "dismissed", "--json")
				if !strings.Contains(r.stdout, "the escalation carries it") {
					t.Errorf("dismissed rows:\n%s", r.stdout)
				}
			},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			c := newSlackCase(t, tc.keys...)
			if tc.before != nil {
				tc.before(t, c)
			}
			c.mustRun(t, exitOK, "sweep", "--once")
			if tc.between != nil {
				tc.between(t, c)
			}
			c.escalate(t)
			if tc.after != nil {
				tc.after(t, c)
			}
			c.requireDelivered(t)
			if r := c.mustRun(t, exitOK, "outbox", "list", "--state", "pending"); !strings.Contains(r.stderr, "0 row(s)") {
				t.Errorf("pending rows left:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

// TestOutboxUsage: outbox's commands refuse what they cannot do before
// touching the database.
func TestOutboxUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		args    []string
		wantErr string
	}{
		{desc: "replay without ids", args: []string{"outbox", "replay", "--by", "a"}, wantErr: "need row ids or --all-parked"},
		{desc: "replay without --by", args: []string{"outbox", "replay", "3", "4"}, wantErr: "--by NAME is required"},
		{desc: "replay ids and --all-parked", args: []string{"outbox", "replay", "3", "--all-parked", "--by", "a"}, wantErr: "either row ids or --all-parked"},
		{desc: "replay --error without --all-parked", args: []string{"outbox", "replay", "3", "--error", "x", "--by", "a"}, wantErr: "--error goes with --all-parked"},
		{desc: "replay --not-posted with --all-parked", args: []string{"outbox", "replay", "--all-parked", "--not-posted", "--by", "a"}, wantErr: "--not-posted is for rows a person checked, one by one"},
		{desc: "replay a bad id", args: []string{"outbox", "replay", "3", "x7", "--by", "a"}, wantErr: `need row ids (positive numbers), got "x7"`},
		{desc: "dismiss without a note", args: []string{"outbox", "dismiss", "3", "--by", "a"}, wantErr: "--note TEXT is required"},
		{desc: "dismiss without ids", args: []string{"outbox", "dismiss", "--by", "a", "--note", "n"}, wantErr: "need row ids"},
		{desc: "an unknown state", args: []string{"outbox", "list", "--state", "lost"}, wantErr: "--state must be pending, sent, parked, dismissed, skipped, folded, silenced or all"},
		{desc: "an unknown subcommand", args: []string{"outbox", "purge"}, wantErr: `unknown command "purge" for "sweeper outbox"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, tc.wantErr)
			}
		})
	}
}
