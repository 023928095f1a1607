package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
)

func TestShortKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, key string
		width     int
		want      string
	}{
		{desc: "short enough", key: "nf-a1", width: 40, want: "nf-a1"},
		{desc: "exactly the width", key: "abcdefghij", width: 10, want: "abcdefghij"},
		{desc: "the end kept, the longer part", key: "billing-invoice-reminder-customer-000123", width: 16, want: "billi…mer-000123"},
		{desc: "runes, not bytes", key: "ééééééééééééééééé-42", width: 10, want: "ééé…ééé-42"},
		{desc: "too narrow to shorten", key: "abcdefgh", width: 4, want: "abcdefgh"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got := shortKey(tc.key, tc.width)
			if got != tc.want {
				t.Errorf("shortKey(%q, %d) = %q, want %q", tc.key, tc.width, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); tc.key != got && n != tc.width {
				t.Errorf("%q is %d characters, want %d", got, n, tc.width)
			}
		})
	}
}

// TestTicketsListTable: long op_keys are shortened in the table and whole
// in --json and `tickets show`; resolved tickets show their resolution and
// who resolved it; the count goes to stderr, so stdout is the table alone.
func TestTicketsListTable(t *testing.T) {
	t.Parallel()
	long := "nf-billing-invoice-reminder-2026-03-customer-000123-attempt-7"
	b := setupResolve(t, long, "nf-short")
	if r := b.run(t, "tickets", "resolve", b.id("nf-short"), "--outcome", "not_sent", "--by", "ops-alice"); r.code != exitOK {
		t.Fatalf("resolve: code %d\n%s", r.code, r.stderr)
	}

	r := b.run(t, "tickets", "list", "--state", "all")
	if r.code != exitOK {
		t.Fatalf("tickets list: code %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "RESOLUTION") || !strings.Contains(lines[0], "RESOLVED BY") {
		t.Fatalf("want a header and two tickets:\n%s", r.stdout)
	}
	if short := shortKey(long, opKeyWidth); strings.Contains(r.stdout, long) || !strings.Contains(r.stdout, short) {
		t.Errorf("the table lacks %q, or has the whole key:\n%s", short, r.stdout)
	}
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		switch last2 := strings.Join(fields[len(fields)-2:], " "); {
		case strings.Contains(line, "nf-short") && last2 != "not_sent ops-alice":
			t.Errorf("resolved ticket: want not_sent ops-alice at the end:\n%s", line)
		case strings.Contains(line, "attempt-7") && last2 != "- -":
			t.Errorf("open ticket: want no resolution:\n%s", line)
		}
	}
	if r.stderr != "2 ticket(s)\n" {
		t.Errorf("stderr = %q, want the count alone", r.stderr)
	}

	// Open tickets only: no resolution columns.
	r = b.run(t, "tickets", "list")
	if r.code != exitOK || strings.Contains(r.stdout, "RESOLUTION") || r.stderr != "1 ticket(s)\n" {
		t.Errorf("open tickets: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Whole in --json and show.
	for _, args := range [][]string{{"tickets", "list", "--json"}, {"tickets", "show", b.id(long)}} {
		if r := b.run(t, args...); r.code != exitOK || !strings.Contains(r.stdout, long) {
			t.Errorf("%s: code %d, the key is not whole:\n%s", strings.Join(args, " "), r.code, r.stdout)
		}
	}
}

// TestCountsGoToStderr: what a script reads from stdout is data alone.
func TestCountsGoToStderr(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-c1")
	for _, tc := range []struct {
		args      []string
		wantCount string
	}{
		{[]string{"tickets", "list"}, "1 ticket(s)\n"},
		{[]string{"outbox", "list", "--state", "skipped"}, "1 row(s)\n"}, // the ticket's alert, recorded skipped: Slack is off
		{[]string{"migrate", "--status"}, "applied, 0 pending\n"},
	} {
		r := b.run(t, tc.args...)
		if r.code != exitOK || !strings.HasSuffix(r.stderr, tc.wantCount) || strings.Contains(r.stdout, strings.TrimSpace(tc.wantCount)) {
			t.Errorf("%s: code %d, want %q on stderr only\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), r.code, tc.wantCount, r.stdout, r.stderr)
		}
	}
}

// TestListLimitAndSince: `tickets list` and `outbox list` print at most
// --limit rows, the oldest, and say on stderr when more exist; --since
// keeps what was created since a duration ago or a time; `outbox list`
// shows the rows still in hand (pending, parked) unless --state says
// otherwise.
func TestListLimitAndSince(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-l1", "nf-l2", "nf-l3")
	ctx := context.Background()
	// Keys by ticket id, the order the lists print; the first ticket
	// opened two days ago.
	keys := []string{"nf-l1", "nf-l2", "nf-l3"}
	slices.SortFunc(keys, func(a, c string) int { return cmp.Compare(b.tickets[a].ID, b.tickets[c].ID) })
	k0, k1, k2 := keys[0], keys[1], keys[2]
	backdate(t, b.pool.(*pgxpool.Pool), `UPDATE sweeper.tickets SET created_at = now() - interval '48 hours' WHERE op_key = '`+k0+`'`)
	for _, tc := range []struct {
		desc       string
		args       []string
		wantKeys   []string
		wantStderr string
	}{
		{desc: "under the default limit", args: []string{"tickets", "list"}, wantKeys: []string{k0, k1, k2}, wantStderr: "3 ticket(s)\n"},
		{desc: "at the limit", args: []string{"tickets", "list", "--limit", "3"}, wantKeys: []string{k0, k1, k2}, wantStderr: "3 ticket(s)\n"},
		{desc: "over the limit", args: []string{"tickets", "list", "--limit", "2"}, wantKeys: []string{k0, k1},
			wantStderr: "2 ticket(s) shown, the oldest; more exist: raise --limit (2) or narrow with --since\n"},
		{desc: "since a duration", args: []string{"tickets", "list", "--since", "24h"}, wantKeys: []string{k1, k2}, wantStderr: "2 ticket(s)\n"},
		{desc: "since days", args: []string{"tickets", "list", "--since", "3d"}, wantKeys: []string{k0, k1, k2}, wantStderr: "3 ticket(s)\n"},
		{desc: "since a time", args: []string{"tickets", "list", "--since", time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)},
			wantKeys: []string{k1, k2}, wantStderr: "2 ticket(s)\n"},
		{desc: "since and limit", args: []string{"tickets", "list", "--since", "24h", "--limit", "1"}, wantKeys: []string{k1},
			wantStderr: "1 ticket(s) shown, the oldest; more exist: raise --limit (1) or narrow with --since\n"},
	} {
		r := b.run(t, tc.args...)
		var got []string
		for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")[1:] {
			got = append(got, strings.Fields(line)[1])
		}
		if r.code != exitOK || strings.Join(got, " ") != strings.Join(tc.wantKeys, " ") || r.stderr != tc.wantStderr {
			t.Errorf("%s: code %d, keys %v, stderr %q; want %v, %q\n%s", tc.desc, r.code, got, r.stderr, tc.wantKeys, tc.wantStderr, r.stdout)
		}
	}
	// --json: one document; the trailer only when more exist.
	r := b.run(t, "tickets", "list", "--json", "--limit", "1")
	var list []cliTicket
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].OpKey != k0 ||
		!strings.Contains(r.stderr, "more exist") {
		t.Errorf("--json --limit 1: %v, %v\nstderr %q", err, list, r.stderr)
	}
	for _, tc := range []struct{ desc, flag, value, wantErr string }{
		{"limit 0", "--limit", "0", "--limit must be between 1 and 10000, not 0"},
		{"limit too large", "--limit", "10001", "--limit must be between 1 and 10000"},
		{"since a word", "--since", "yesterday", `--since "yesterday" is neither a duration`},
		{"since a negative duration", "--since", "-1h", `--since "-1h": a duration before now is positive`},
	} {
		for _, cmd := range [][]string{{"tickets", "list"}, {"outbox", "list"}} {
			if r := b.run(t, append(cmd, tc.flag, tc.value)...); r.code != exitUsage || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("%s %s: code %d, stderr %q; want 2 and %q", strings.Join(cmd, " "), tc.desc, r.code, r.stderr, tc.wantErr)
			}
		}
	}

	// The outbox: one opened row per ticket, pending (as Slack unreachable
	// leaves them; with Slack off the pass recorded them skipped); one is
	// sent, one is parked.
	if _, err := b.pool.Exec(ctx, `UPDATE sweeper.outbox SET state = 'pending', error_code = NULL WHERE error_code = 'no_receiver'`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE sweeper.outbox SET state = 'sent', sent_at = now(), channel = 'C0TEST', ts = '1.1',
		last_error = 'chat.postMessage: not_in_channel', error_code = 'not_in_channel' WHERE id = (SELECT min(id) FROM sweeper.outbox)`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE sweeper.outbox SET state = 'parked', error_code = 'channel_not_found' WHERE id = (SELECT max(id) FROM sweeper.outbox)`); err != nil {
		t.Fatal(err)
	}
	outboxStates := func(args ...string) (string, string) {
		t.Helper()
		r := b.run(t, append([]string{"outbox", "list"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("outbox list %v: code %d\n%s", args, r.code, r.stderr)
		}
		var states []string
		for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")[1:] {
			// ID, RECEIVER, TICKET, KIND, STATE, …
			if f := strings.Fields(line); f[1] != "slack" {
				t.Errorf("outbox list: receiver %q, want slack: %s", f[1], line)
			}
			states = append(states, strings.Fields(line)[4])
		}
		return strings.Join(states, " "), r.stderr
	}
	var total int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.outbox`).Scan(&total); err != nil || total < 3 {
		t.Fatalf("%d outbox rows, %v; want one per ticket at least", total, err)
	}
	if got, stderr := outboxStates(); strings.Contains(got, "sent") || !strings.Contains(got, "parked") || !strings.Contains(got, "pending") ||
		stderr != fmt.Sprintf("%d row(s)\n", total-1) {
		t.Errorf("outbox list by default: %q, %q; want the pending and parked rows alone", got, stderr)
	}
	if got, _ := outboxStates("--state", "all"); !strings.HasPrefix(got, "sent ") || strings.Count(got, " ")+1 != total {
		t.Errorf("outbox list --state all: %q; want all %d rows", got, total)
	}
	if got, _ := outboxStates("--state", "sent,parked"); got != "sent parked" {
		t.Errorf("outbox list --state sent,parked: %q", got)
	}
	// A row sent with an old error (before sending cleared it) shows none.
	if r := b.run(t, "outbox", "list", "--state", "sent"); r.code != exitOK || strings.Contains(r.stdout, "not_in_channel") ||
		!strings.Contains(r.stdout, "1.1") {
		t.Errorf("outbox list --state sent shows the stale error:\n%s", r.stdout)
	}
	if got, stderr := outboxStates("--state", "all", "--limit", "1"); got != "sent" || !strings.Contains(stderr, "1 row(s) shown, the oldest; more exist") {
		t.Errorf("outbox list --limit 1: %q, %q", got, stderr)
	}
	backdate(t, b.pool.(*pgxpool.Pool), `UPDATE sweeper.outbox SET created_at = now() - interval '48 hours' WHERE id = (SELECT max(id) FROM sweeper.outbox)`)
	if got, _ := outboxStates("--since", "1d"); strings.Contains(got, "parked") || !strings.Contains(got, "pending") {
		t.Errorf("outbox list --since 1d: %q; want the recent pending rows alone", got)
	}
}

// backdate runs update with the guard triggers off (a superuser's
// replication role): created_at never changes otherwise.
func backdate(t *testing.T, db *pgxpool.Pool, update string) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if tag, err := tx.Exec(ctx, update); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("%s: %v, %d rows", update, err, tag.RowsAffected())
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTicketsListByGroup: `tickets list --group N` lists an alert group's
// tickets — those with their own alert in its thread and those folded into
// its counts — and no other; `outbox list --state folded` shows the folded
// rows with their group; a folded ticket resolves from the CLI.
func TestTicketsListByGroup(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "grp-a", "grp-b", "grp-c", "alone")
	ctx := context.Background()
	var group int64
	if err := b.pool.QueryRow(ctx, `INSERT INTO sweeper.alert_groups (channel, provider, reason)
		VALUES ('C0', 'sim', 'not_found') RETURNING id`).Scan(&group); err != nil {
		t.Fatal(err)
	}
	// grp-a's alert in the thread, grp-b and grp-c folded, as a dispatcher
	// with slack.group_detail_limit 1 leaves them.
	for key, state := range map[string]string{"grp-a": "pending", "grp-b": "folded", "grp-c": "folded"} {
		if _, err := b.pool.Exec(ctx, `UPDATE sweeper.outbox SET group_id = $1, state = $2,
				error_code = CASE WHEN $2 = 'folded' THEN 'over_detail_limit' END
			WHERE ticket_id = $3 AND kind = 'opened'`, group, state, b.tickets[key].ID); err != nil {
			t.Fatal(err)
		}
	}
	r := b.run(t, "tickets", "list", "--group", fmt.Sprint(group), "--json")
	var list []cliTicket
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != exitOK || err != nil {
		t.Fatalf("tickets list --group: code %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	var keys []string
	for _, tk := range list {
		keys = append(keys, tk.OpKey)
	}
	slices.Sort(keys)
	if want := []string{"grp-a", "grp-b", "grp-c"}; !slices.Equal(keys, want) {
		t.Errorf("tickets of group %d: %v, want %v", group, keys, want)
	}
	if r := b.run(t, "tickets", "list", "--group", "999999"); r.code == exitOK || !strings.Contains(r.stderr, "alert group not found") {
		t.Errorf("an unknown group: code %d, stderr %q; want it named not found", r.code, r.stderr)
	}

	r = b.run(t, "outbox", "list", "--state", "folded")
	if r.code != exitOK {
		t.Fatalf("outbox list --state folded: code %d\n%s", r.code, r.stderr)
	}
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 3 ||
		!strings.Contains(r.stdout, fmt.Sprintf("over_detail_limit (group %d)", group)) {
		t.Errorf("outbox list --state folded: want the two folded rows with their group:\n%s", r.stdout)
	}

	if r := b.run(t, "tickets", "resolve", b.id("grp-b"), "--outcome", "not_sent", "--by", "ops-alice"); r.code != exitOK {
		t.Errorf("resolve a folded ticket: code %d\n%s", r.code, r.stderr)
	}
}
