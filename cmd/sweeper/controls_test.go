package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileText is what a provider (or a person) can write where sweeper
// prints it: OSC 0 retitles the terminal, OSC 52 writes its clipboard, CSI
// clears the screen and colours, a C1 CSI, DEL and a bidi override.
const hostileText = "boom \x1b]0;pwned\x07 \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\ \x1b[2J\x1b[31mred\x1b[0m \u009b31m \x7f \u202elive\u202c\x1bP1$r\x1b\\"

// unsafeOutput lists the control characters, bidi controls and line
// separators in out, line breaks and tabs (the output's own layout) aside,
// and whether it is not UTF-8.
func unsafeOutput(out string) []string {
	var found []string
	if !utf8.ValidString(out) {
		found = append(found, "invalid UTF-8")
	}
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x2028, r == 0x2029:
			found = append(found, fmt.Sprintf("%U", r))
		}
	}
	return found
}

// TestCLIPrintsNoControls: text from outside — a provider's error in its
// health and in the outbox, a Slack error code, an evidence snapshot in an
// event, who resolved a ticket and why — reaches the operator's terminal
// with every control character and escape sequence made inert, as table
// and as JSON.
func TestCLIPrintsNoControls(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-ctl1")
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO sweeper.provider_health (provider, state, since, probe_at, last_error)
		 VALUES ('sim', 'down', now() - interval '2 minutes', now() + interval '20 seconds', $1)`,
		`UPDATE sweeper.outbox SET last_error = $1, error_code = $1`,
		`INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, details, dedupe_key)
		 SELECT id, 'record_found_after_not_sent', 'sweeper', jsonb_build_object('evidence', jsonb_build_object('detail', $1::text)), 'hostile'
		 FROM sweeper.tickets`,
	} {
		if _, err := b.pool.Exec(ctx, q, hostileText); err != nil {
			t.Fatal(err)
		}
	}
	if r := b.run(t, "tickets", "resolve", b.id("nf-ctl1"), "--outcome", "not_sent", "--by", "ops\x1b[2J"+hostileText, "--note", hostileText); r.code != exitOK {
		t.Fatalf("resolve: code %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"providers"}, {"providers", "--json"},
		{"outbox", "list", "--state", "all"}, {"outbox", "list", "--state", "all", "--json"},
		{"tickets", "list", "--state", "all"}, {"tickets", "list", "--state", "all", "--json"},
		{"tickets", "show", b.id("nf-ctl1")}, {"tickets", "show", b.id("nf-ctl1"), "--json"},
	} {
		r := b.run(t, args...)
		if r.code != exitOK {
			t.Errorf("%s: code %d\n%s", strings.Join(args, " "), r.code, r.stderr)
			continue
		}
		if n := strings.Count(r.stdout+r.stderr, "\x1b"); n > 0 {
			t.Errorf("%s prints %d ESC bytes:\n%q", strings.Join(args, " "), n, r.stdout)
		}
		if bad := unsafeOutput(r.stdout + r.stderr); len(bad) > 0 {
			t.Errorf("%s prints %d control characters:\n%q", strings.Join(args, " "), len(bad), r.stdout)
		}
		if !strings.Contains(r.stdout, "pwned") {
			t.Errorf("%s: the text itself is gone:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
}

// TestLogsPrintNoControls: a provider's error logged as an attribute, or
// in the message, reaches the log — text for a terminal, JSON otherwise —
// with no control character raw, and still readable.
func TestLogsPrintNoControls(t *testing.T) {
	t.Parallel()
	for _, text := range []bool{true, false} {
		var buf bytes.Buffer
		logger := slog.New(newLogHandler(&buf, slog.LevelInfo, text))
		logger.Warn("lookup failed: "+hostileText, "provider", "sms", "error", errors.New("sms: HTTP 400: "+hostileText),
			slog.Group("last", "error", hostileText))
		out := buf.String()
		if bad := unsafeOutput(out); len(bad) > 0 {
			t.Errorf("text=%v: the log holds %v:\n%q", text, bad, out)
		}
		if strings.Count(out, "pwned") != 3 {
			t.Errorf("text=%v: the log lost the text:\n%s", text, out)
		}
		if !text {
			var line map[string]any
			if err := json.Unmarshal([]byte(out), &line); err != nil || line["error"] != "sms: HTTP 400: "+hostileText {
				t.Errorf("the JSON log does not read back as what was logged: %v\n%s", err, out)
			}
		}
	}
}

func TestInertJSON(t *testing.T) {
	t.Parallel()
	for _, v := range []any{hostileText, map[string]any{"k\u009b": []any{"\u2028\u202e", "日本👩‍👩‍👧", 1.5}}} {
		var buf bytes.Buffer
		if err := writeJSON(&buf, "", v); err != nil {
			t.Fatal(err)
		}
		if bad := unsafeOutput(buf.String()); len(bad) > 0 {
			t.Errorf("writeJSON(%q) holds %v: %q", v, bad, buf.String())
		}
		var back any
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		got, _ := json.Marshal(back)
		if !bytes.Equal(want, got) {
			t.Errorf("writeJSON changed the data: %s, want %s", got, want)
		}
	}
}
