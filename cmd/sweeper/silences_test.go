package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// cliSilence is what the tests read of a silence's JSON.
type cliSilence struct {
	ID       int64 `json:"id"`
	Matchers []struct {
		Name, Op, Value string
	} `json:"matchers"`
	State       string `json:"state"`
	CreatedBy   string `json:"created_by"`
	ExpiredBy   string `json:"expired_by"`
	HeldRows    int64  `json:"held_rows"`
	HeldTickets int64  `json:"held_tickets"`
}

// TestSilencesAddRefuses: every silence that could not be what its author
// meant exits 2 and adds nothing: no matchers, no end, an end in the past
// or past the longest silence, a pattern PostgreSQL cannot read, matchers
// that match everything, an unknown label, an author who is no Slack user,
// no comment, and one that matches no open ticket and names nothing known
// (unless --force).
func TestSilencesAddRefuses(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-s1")
	ok := []string{"--end", "2h", "--by", "U0OPS", "--comment", "sms migration"}
	for _, tc := range []struct {
		desc string
		args []string
		want string
	}{
		{"no matchers", ok, "no matchers"},
		{"no end", []string{"provider=sim", "--by", "U0OPS", "--comment", "x"}, "an end is required"},
		{"end in the past", []string{"provider=sim", "--end", "2020-01-01", "--by", "U0OPS", "--comment", "x"}, "after its start"},
		{"end not a time", []string{"provider=sim", "--end", "soon", "--by", "U0OPS", "--comment", "x"}, "neither a duration"},
		{"too long", []string{"provider=sim", "--end", "30d", "--by", "U0OPS", "--comment", "x"}, "at most"},
		{"bad pattern", append([]string{"workflow=~bill(ing"}, ok...), "not a PostgreSQL regular expression"},
		{"matches everything", append([]string{"provider=~.*"}, ok...), "match everything"},
		{"unknown label", append([]string{"recipient=jane"}, ok...), "no label"},
		{"author", []string{"provider=sim", "--end", "2h", "--by", "alice", "--comment", "x"}, "Slack user id"},
		{"no comment", []string{"provider=sim", "--end", "2h", "--by", "U0OPS"}, "a comment is required"},
		{"nothing known", append([]string{"provider=smss"}, ok...), "matches no open ticket"},
	} {
		r := b.run(t, append([]string{"silences", "add"}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: code %d, want %d saying %q\n%s", tc.desc, r.code, exitUsage, tc.want, r.stderr)
		}
	}
	r := b.run(t, "silences", "list", "--state", "all", "--json")
	if r.code != exitOK || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("silences after refusals: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --force adds what names nothing known, and says so.
	r = b.run(t, append([]string{"silences", "add", "provider=smss", "--force"}, ok...)...)
	if r.code != exitOK || !strings.Contains(r.stderr, "warning: it matches no open ticket") {
		t.Fatalf("add --force: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A known provider with no open ticket is a planned silence: added.
	r = b.run(t, append([]string{"silences", "add", "provider=sim", "reason=payload_mismatch"}, ok...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "matches 0 open ticket(s)") {
		t.Fatalf("add a planned silence: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A long one is added with a warning.
	// (Not workflow=billing alone: with one provider, one workflow and
	// one ticket, that would hold everything there is.)
	r = b.run(t, "silences", "add", "workflow=billing", "reason=not_found", "--end", "3d", "--by", "U0OPS", "--comment", "x")
	if r.code != exitOK || !strings.Contains(r.stderr, "warning: the silence lasts 72h0m0s") {
		t.Fatalf("add a long one: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestSilencesAddNeverHoldsEverything: a silence that would hold every
// ticket — a pattern matching any value of its label, or matchers that
// together match every open ticket and every provider — exits 2 saying
// how many open tickets and providers it would hold, and adds nothing;
// with --force it is added, with that as a warning. A pattern with a
// back-reference exits 2 even forced.
func TestSilencesAddNeverHoldsEverything(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-s1", "nf-s2")
	ok := []string{"--end", "2h", "--by", "U0OPS", "--comment", "everything"}
	for _, m := range [][]string{{"provider=~.+"}, {"reason=~.+"}, {"workflow=~.+"}, {"owner=~[^x]*[^x]"}, {"provider=sim", "workflow=~bill.*"}} {
		r := b.run(t, append(append([]string{"silences", "add"}, m...), ok...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "would hold all 2 open tickets and all 1 providers") ||
			!strings.Contains(r.stderr, "add --force if you mean it") {
			t.Errorf("%v: code %d, want %d naming the counts\n%s", m, r.code, exitUsage, r.stderr)
		}
	}
	if r := b.run(t, append([]string{"silences", "add", `workflow=~(.*)(.*)\1\2`, "--force"}, ok...)...); r.code != exitUsage ||
		!strings.Contains(r.stderr, "back-reference") {
		t.Errorf("a back-reference, forced: code %d\n%s", r.code, r.stderr)
	}
	if r := b.run(t, "silences", "list", "--state", "all", "--json"); r.code != exitOK || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("silences after the refusals: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := b.run(t, append([]string{"silences", "add", "provider=~.+", "--force"}, ok...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "matches 2 open ticket(s)") ||
		!strings.Contains(r.stderr, "warning: it would hold all 2 open tickets and all 1 providers") {
		t.Fatalf("add --force: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestSilencesLifecycle: a silence added from the CLI holds the ticket's
// next notification (outbox list shows it silenced, naming the silence),
// list counts what it held, expire ends it once, recording who, and the
// ticket still open gets its one current alert at the next dispatch.
func TestSilencesLifecycle(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-s1")
	// The reason too: the provider and the workflow alone would hold every
	// ticket of this configuration, which has one of each.
	r := b.run(t, "silences", "add", "provider=sim", "workflow=~bill.*", "reason=not_found", "--end", "2h", "--by", "U0OPS", "--comment", "sim migration", "--json")
	var added cliSilence
	if err := json.Unmarshal([]byte(r.stdout), &added); r.code != exitOK || err != nil || added.State != "active" || len(added.Matchers) != 3 {
		t.Fatalf("add: code %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if r := b.run(t, "tickets", "note", b.id("nf-s1"), "--by", "U0OPS", "looking"); r.code != exitOK {
		t.Fatalf("note: code %d\n%s", r.code, r.stderr)
	}
	if r := b.run(t, "notify", "--once"); r.code != exitOK || !strings.Contains(r.stdout, "1 held by a silence") {
		t.Fatalf("notify --once: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = b.run(t, "outbox", "list", "--state", "silenced")
	if r.code != exitOK || !strings.Contains(r.stdout, "silenced") || !strings.Contains(r.stdout, fmt.Sprintf("silence %d", added.ID)) {
		t.Fatalf("outbox list --state silenced: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = b.run(t, "silences", "list")
	if r.code != exitOK || !strings.Contains(r.stdout, "1 rows, 1 tickets") || !strings.Contains(r.stdout, "provider=sim workflow=~bill.* reason=not_found") {
		t.Fatalf("silences list: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	if r := b.run(t, "silences", "expire", fmt.Sprint(added.ID), "--by", "alice"); r.code != exitUsage {
		t.Errorf("expire by a name: code %d, want %d", r.code, exitUsage)
	}
	if r := b.run(t, "silences", "expire", fmt.Sprint(added.ID)); r.code != exitUsage {
		t.Errorf("expire without --by: code %d, want %d", r.code, exitUsage)
	}
	r = b.run(t, "silences", "expire", fmt.Sprint(added.ID), "--by", "U0OPS")
	if r.code != exitOK || !strings.Contains(r.stdout, "expired by U0OPS") {
		t.Fatalf("expire: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := b.run(t, "silences", "expire", fmt.Sprint(added.ID), "999", "--by", "U0OPS"); r.code != exitFailure ||
		!strings.Contains(r.stderr, "ended already") || !strings.Contains(r.stderr, "not found") {
		t.Errorf("expire again and an unknown one: code %d\n%s", r.code, r.stderr)
	}
	r = b.run(t, "silences", "list", "--state", "expired", "--json")
	var list []cliSilence
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != exitOK || err != nil || len(list) != 1 ||
		list[0].ExpiredBy != "U0OPS" || list[0].HeldRows != 1 || list[0].HeldTickets != 1 {
		t.Fatalf("expired silences: code %d, %v, %+v\n%s", r.code, err, list, r.stderr)
	}
	if r := b.run(t, "silences", "list"); r.code != exitOK || r.stderr != "0 silence(s)\n" {
		t.Errorf("active silences after the expiry: %q", r.stderr)
	}

	// The ticket, still open, gets its one alert (recorded skipped here:
	// Slack is off) at the next dispatch, and no second one after.
	r = b.run(t, "notify", "--once")
	if r.code != exitOK || !strings.Contains(r.stdout, "1 ticket(s) given their current alert as a silence ended") {
		t.Fatalf("notify --once after the expiry: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tk := b.show(t, "nf-s1")
	ended := 0
	for _, ev := range tk.Events {
		if ev.Kind == "silence_ended" {
			ended++
		}
	}
	if ended != 1 {
		t.Errorf("%d silence_ended events, want 1: %+v", ended, tk.Events)
	}
	if r := b.run(t, "notify", "--once"); r.code != exitOK || strings.Contains(r.stdout, "current alert") {
		t.Errorf("a second dispatch: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
