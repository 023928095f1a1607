package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

var (
	// snakeKey is every key sweeper's JSON uses.
	snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// numberKey is a map keyed by a number, such as escalation levels:
	// data, not a field name.
	numberKey = regexp.MustCompile(`^[0-9]+$`)
)

// badKeys lists the object keys in v, at any depth, that are not
// snake_case, each with its path.
func badKeys(v any, path string) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if !snakeKey.MatchString(k) && !numberKey.MatchString(k) {
				bad = append(bad, path+"."+k)
			}
			bad = append(bad, badKeys(child, path+"."+k)...)
		}
	case []any:
		for i, child := range v {
			bad = append(bad, badKeys(child, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return bad
}

// TestJSONOutput runs every command that takes --json and checks its
// output: JSON, every key snake_case, and <, > and & as written (a Slack
// mention reads <@U…>, not \u003c@U…\u003e).
func TestJSONOutput(t *testing.T) {
	t.Parallel()
	fake := slackfake.New(t)
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, slackConfig(fake))
	environ := map[string]string{
		config.EnvDatabaseURL:  dbURL,
		config.EnvSlackToken:   slackfake.Token,
		config.EnvSlackSigning: "signing-secret",
	}
	seed(t, dbURL, "found-j1", "many-j2", "nf-j3")
	const mention = "<@U0ALICE> & co"

	// Each step runs after the one before, on the same database, so that
	// every command has something to print.
	var tickets []struct {
		ID    int64  `json:"id"`
		OpKey string `json:"op_key"`
	}
	ticketID := func(key string) string {
		for _, tk := range tickets {
			if tk.OpKey == key {
				return fmt.Sprint(tk.ID)
			}
		}
		t.Fatalf("no ticket for %s in %v", key, tickets)
		return ""
	}
	steps := []struct {
		desc        string
		args        func() []string
		wantMention bool // the output quotes mention
		after       func(stdout string)
	}{
		{desc: "sweep --dry-run", args: func() []string { return []string{"sweep", "--once", "--dry-run", "--json"} }},
		{desc: "sweep", args: func() []string { return []string{"sweep", "--once", "--json"} }},
		{desc: "tickets list", args: func() []string { return []string{"tickets", "list", "--json"} },
			after: func(stdout string) {
				if err := json.Unmarshal([]byte(stdout), &tickets); err != nil || len(tickets) != 2 {
					t.Fatalf("tickets: %v, %d", err, len(tickets))
				}
				// Due, for escalate to have something to print.
				if err := execAsSweeper(t.Context(), dbtest.Pool(t, dbURL), `UPDATE sweeper.tickets SET deadline = now() - interval '1 minute'`); err != nil {
					t.Fatal(err)
				}
			}},
		{desc: "escalate", args: func() []string { return []string{"escalate", "--once", "--json"} }},
		{desc: "tickets ack", args: func() []string { return []string{"tickets", "ack", ticketID("many-j2"), "--by", "ops-alice", "--json"} }},
		{desc: "tickets resolve", wantMention: true, args: func() []string {
			return []string{"tickets", "resolve", ticketID("nf-j3"), "--outcome", "not_sent", "--by", "ops-alice", "--note", mention, "--json"}
		}},
		{desc: "tickets show", wantMention: true, args: func() []string { return []string{"tickets", "show", ticketID("nf-j3"), "--json"} }},
		{desc: "notify", args: func() []string { return []string{"notify", "--once", "--json"} }},
		{desc: "outbox list", args: func() []string { return []string{"outbox", "list", "--state", "all", "--json"} }},
		{desc: "migrate --status", args: func() []string { return []string{"migrate", "--status", "--json"} }},
	}
	for _, step := range steps {
		r := runCLI(t, environ, append(step.args(), "--config", cfgFile)...)
		if r.code != exitOK {
			t.Fatalf("%s: code %d\n%s%s", step.desc, r.code, r.stdout, r.stderr)
		}
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", step.desc, err, r.stdout)
		}
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			t.Errorf("%s: an empty object", step.desc)
		}
		if bad := badKeys(v, step.desc); len(bad) > 0 {
			t.Errorf("%s: keys not in snake_case: %v\n%s", step.desc, bad, r.stdout)
		}
		for _, escaped := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(r.stdout, escaped) {
				t.Errorf("%s: HTML-escaped output (%s):\n%s", step.desc, escaped, r.stdout)
			}
		}
		if step.wantMention && !strings.Contains(r.stdout, mention) {
			t.Errorf("%s: output lacks %q as written:\n%s", step.desc, mention, r.stdout)
		}
		if step.after != nil {
			step.after(r.stdout)
		}
	}
}
