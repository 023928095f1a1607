package main

import (
	"strings"
	"testing"
	"unicode/utf8"
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
		{[]string{"outbox", "list"}, "1 row(s)\n"}, // the ticket's alert
		{[]string{"migrate", "--status"}, "applied, 0 pending\n"},
	} {
		r := b.run(t, tc.args...)
		if r.code != exitOK || !strings.HasSuffix(r.stderr, tc.wantCount) || strings.Contains(r.stdout, strings.TrimSpace(tc.wantCount)) {
			t.Errorf("%s: code %d, want %q on stderr only\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), r.code, tc.wantCount, r.stdout, r.stderr)
		}
	}
}
