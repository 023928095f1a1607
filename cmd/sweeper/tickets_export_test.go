package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/review"
)

// TestTicketsExport: both formats hold every ticket of the window with its
// events and resolution, recipients masked and control characters escaped;
// the CSV starts with its header line, one row per event after it.
func TestTicketsExport(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-e1", "nf-e2")
	if r := b.run(t, "tickets", "resolve", b.id("nf-e1"), "--outcome", "not_sent", "--by", "ops-alice",
		"--note", "checked \x1b[31mred\x1b[0m"); r.code != exitOK {
		t.Fatalf("resolve: code %d\n%s", r.code, r.stderr)
	}

	r := b.run(t, "tickets", "export", "--since", "1h", "--format", "jsonl")
	if r.code != exitOK {
		t.Fatalf("export jsonl: code %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per ticket, 2:\n%s", r.stdout)
	}
	events := 0
	for _, line := range lines {
		var tk struct {
			cliTicket
			Evidence struct {
				RecipientMasked string `json:"recipient_masked"`
			} `json:"evidence"`
			Events []struct {
				Kind string `json:"kind"`
			} `json:"events"`
		}
		if err := json.Unmarshal([]byte(line), &tk); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		events += len(tk.Events)
		if len(tk.Events) == 0 || tk.Events[0].Kind != "opened" {
			t.Errorf("ticket %s: events %+v, want opened first", tk.OpKey, tk.Events)
		}
		if tk.Evidence.RecipientMasked == "" {
			t.Errorf("ticket %s: no masked recipient in its evidence", tk.OpKey)
		}
		if tk.OpKey == "nf-e1" && (tk.Resolution != "not_sent" || tk.ResolvedBy != "ops-alice" || len(tk.Events) < 2) {
			t.Errorf("resolved ticket: %+v", tk)
		}
	}
	if !strings.Contains(r.stderr, "2 ticket(s)") {
		t.Errorf("stderr = %q, want the count", r.stderr)
	}

	r = b.run(t, "tickets", "export", "--since", "1h", "--format", "csv")
	if r.code != exitOK {
		t.Fatalf("export csv: code %d\n%s", r.code, r.stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	if !slices.Equal(rows[0], review.ExportColumns) {
		t.Errorf("header = %v, want %v", rows[0], review.ExportColumns)
	}
	if len(rows)-1 != events {
		t.Errorf("%d rows after the header, want one per event, %d", len(rows)-1, events)
	}
	col := func(name string) int { return slices.Index(review.ExportColumns, name) }
	resolvedRows := 0
	for _, row := range rows[1:] {
		if row[col("recipient_masked")] == "" || row[col("event_kind")] == "" {
			t.Errorf("row without a masked recipient or an event: %v", row)
		}
		if row[col("op_key")] == "nf-e1" {
			resolvedRows++
			if row[col("resolution")] != "not_sent" || row[col("resolved_by")] != "ops-alice" || row[col("resolved_at")] == "" {
				t.Errorf("resolved ticket's row: %v", row)
			}
		}
	}
	if resolvedRows < 2 {
		t.Errorf("the resolved ticket has %d rows, want its opened and resolved events", resolvedRows)
	}

	for _, out := range []string{lines[0] + lines[1], r.stdout} {
		if strings.Contains(out, "jane.doe") || strings.Contains(out, "example.com") {
			t.Errorf("the raw recipient is in the export:\n%s", out)
		}
		if strings.ContainsRune(out, '\x1b') {
			t.Errorf("a raw escape character is in the export:\n%q", out)
		}
	}
}

// TestTicketsExportWindow: the window's bounds are read as RFC 3339 times,
// dates and durations before now; an empty window still writes the CSV
// header; --output writes the file only once complete.
func TestTicketsExportWindow(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-w1")
	now := time.Now().UTC()
	for _, tc := range []struct {
		desc         string
		since, until string
		want         int
	}{
		{desc: "a duration to now", since: "10m", want: 1},
		{desc: "RFC 3339 on both sides", since: now.Add(-time.Hour).Format(time.RFC3339), until: now.Add(time.Hour).Format(time.RFC3339), want: 1},
		{desc: "ended before the ticket", since: "2026-01-01", until: now.Add(-time.Hour).Format(time.RFC3339), want: 0},
		{desc: "starts after the ticket", since: now.Add(time.Minute).Format(time.RFC3339), until: now.Add(time.Hour).Format(time.RFC3339), want: 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			args := []string{"tickets", "export", "--format", "csv", "--since", tc.since}
			if tc.until != "" {
				args = append(args, "--until", tc.until)
			}
			r := b.run(t, args...)
			if r.code != exitOK {
				t.Fatalf("code %d\n%s", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if lines[0] != strings.Join(review.ExportColumns, ",") {
				t.Errorf("first line = %q, want the header", lines[0])
			}
			tickets := map[string]bool{}
			for _, l := range lines[1:] {
				tickets[strings.SplitN(l, ",", 2)[0]] = true
			}
			if len(tickets) != tc.want {
				t.Errorf("%d tickets, want %d:\n%s", len(tickets), tc.want, r.stdout)
			}
		})
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	if r := b.run(t, "tickets", "export", "--since", "1h", "--output", path); r.code != exitOK || r.stdout != "" {
		t.Fatalf("--output: code %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil || bytes.Count(data, []byte("\n")) != 1 || !bytes.Contains(data, []byte(`"nf-w1"`)) {
		t.Errorf("the file holds %q (%v), want the ticket's line", data, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files, want the export alone", len(entries))
	}
	// A second export to the same file is refused, and --force replaces it.
	if err := os.WriteFile(path, []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := b.run(t, "tickets", "export", "--since", "1h", "--output", path); r.code != exitUsage || !strings.Contains(r.stderr, "exists") {
		t.Errorf("--output over a file: code %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	if data, _ := os.ReadFile(path); string(data) != "kept\n" {
		t.Errorf("the refused export changed the file: %q", data)
	}
	if r := b.run(t, "tickets", "export", "--since", "1h", "--output", path, "--force"); r.code != exitOK {
		t.Errorf("--force: code %d\n%s", r.code, r.stderr)
	}
	if data, _ := os.ReadFile(path); !bytes.Contains(data, []byte(`"nf-w1"`)) {
		t.Errorf("--force did not replace the file: %q", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files, want the export alone", len(entries))
	}
}

// TestTicketsExportUsage: a window or format the command cannot read exits
// 2 before touching the database.
func TestTicketsExportUsage(t *testing.T) {
	t.Parallel()
	existing := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(existing, []byte("last month's audit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc    string
		args    []string
		wantErr string
	}{
		{desc: "no since", args: []string{}, wantErr: "--since is required"},
		{desc: "neither a time nor a duration", args: []string{"--since", "30 days"}, wantErr: "--since"},
		{desc: "a negative duration", args: []string{"--since", "-1h"}, wantErr: "positive"},
		{desc: "since after until", args: []string{"--since", "2026-11-02", "--until", "2026-11-01"}, wantErr: "is not before"},
		{desc: "an unknown format", args: []string{"--since", "1h", "--format", "xml"}, wantErr: "jsonl or csv"},
		{desc: "an output file that exists", args: []string{"--since", "30d", "--output", existing},
			wantErr: "--output " + existing + " exists; export never overwrites a file: pass --force"},
		{desc: "--force without --output", args: []string{"--since", "30d", "--force"}, wantErr: "give --output FILE"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, map[string]string{}, append([]string{"tickets", "export"}, tc.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("code %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, tc.wantErr)
			}
		})
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "last month's audit\n" {
		t.Errorf("the existing file now holds %q (%v)", b, err)
	}
}
