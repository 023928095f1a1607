package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// hashVector is one entry of ledger/testdata/payload-hash-vectors.json, the
// file ledger's Go tests and the JavaScript snippet's tests also read.
type hashVector struct {
	Desc      string `json:"desc"`
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
	SHA256    string `json:"sha256"`
	Error     bool   `json:"error"`
}

// runCLIIn is runCLI with stdin.
func runCLIIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr strings.Builder
	code := runIn(t.Context(), args, strings.NewReader(stdin), &stdout, &stderr, func(string) string { return "" })
	return result{code, stdout.String(), stderr.String()}
}

func TestHashCommandMatchesVectors(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../ledger/testdata/payload-hash-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Vectors []hashVector }
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) < 40 {
		t.Fatalf("only %d vectors", len(file.Vectors))
	}
	for _, v := range file.Vectors {
		t.Run(v.Desc, func(t *testing.T) {
			t.Parallel()
			for _, r := range []struct {
				how string
				res result
			}{
				{"argument", runCLIIn(t, "", "hash", v.Input)},
				{"stdin", runCLIIn(t, v.Input, "hash")},
				{"stdin as -", runCLIIn(t, v.Input, "hash", "-")},
			} {
				if v.Error {
					if r.res.code != exitUsage || r.res.stdout != "" || !strings.HasPrefix(r.res.stderr, "sweeper hash: ") {
						t.Errorf("%s: code %d, stdout %q, stderr %q; want exit 2 and the reason", r.how, r.res.code, r.res.stdout, r.res.stderr)
					}
					if strings.Contains(r.res.stderr, "Usage:") {
						t.Errorf("%s: bad input printed the usage:\n%s", r.how, r.res.stderr)
					}
					continue
				}
				if r.res.code != exitOK || r.res.stdout != v.SHA256+"\n" {
					t.Errorf("%s: code %d, stdout %q, stderr %q; want %s", r.how, r.res.code, r.res.stdout, r.res.stderr, v.SHA256)
				}
			}
			if !v.Error {
				r := runCLIIn(t, v.Input, "hash", "--canonical")
				if r.code != exitOK || r.stdout != v.Canonical+"\n" {
					t.Errorf("--canonical: code %d, stdout %q, want %q", r.code, r.stdout, v.Canonical)
				}
			}
		})
	}
}

func TestHashCommandBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		stdin   string
		args    []string
		wantErr string
	}{
		{desc: "nothing on stdin", args: []string{"hash"}, wantErr: "sweeper hash: no JSON: pass the document as an argument or on stdin\n"},
		{desc: "blank argument", args: []string{"hash", " "}, wantErr: "sweeper hash: no JSON"},
		{desc: "truncated object", args: []string{"hash", `{"a":1`}, wantErr: "sweeper hash: invalid payload: the JSON ends before its value does\n"},
		{desc: "truncated array", args: []string{"hash", `[1,`}, wantErr: "the JSON ends before its value does"},
		{desc: "two documents", stdin: `{"a":1} {"b":2}`, args: []string{"hash"}, wantErr: "invalid payload: data after the JSON value"},
		{desc: "duplicate key", args: []string{"hash", `{"a":1,"a":2}`}, wantErr: `invalid payload: duplicate key "a"`},
		{desc: "stdin over the bound", stdin: `"` + strings.Repeat("x", 1<<20) + `"`, args: []string{"hash"}, wantErr: "more than 1048576 bytes"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLIIn(t, tc.stdin, tc.args...)
			if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("code %d, stdout %q, stderr %q; want exit 2 and %q", r.code, r.stdout, r.stderr, tc.wantErr)
			}
		})
	}
	// Two arguments: a usage mistake, with the usage.
	r := runCLIIn(t, "", "hash", `{"a":`, `1}`)
	if r.code != exitUsage || !strings.Contains(r.stderr, `unexpected argument "1}"`) || !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("two arguments: code %d, stderr %q", r.code, r.stderr)
	}
	// hash reads no configuration.
	if r := runCLIIn(t, "", "hash", "--config", "x.toml", "{}"); r.code != exitUsage {
		t.Errorf("--config accepted: code %d, stderr %q", r.code, r.stderr)
	}
}

// TestDocHashExample runs every `$ sweeper hash …` line of docs/ledger.md's
// "Payload hash" section and compares its stdout with the lines printed
// under it there.
func TestDocHashExample(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/ledger.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Payload hash\n")
	if !ok {
		t.Fatal(`docs/ledger.md has no "## Payload hash" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	lines := strings.Split(section, "\n")
	examples := 0
	for i := 0; i < len(lines); i++ {
		line, ok := strings.CutPrefix(lines[i], "$ sweeper ")
		if !ok {
			continue
		}
		args := shellWords(t, line)
		var want strings.Builder
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "$ ") && !strings.HasPrefix(lines[i], "```"); i++ {
			want.WriteString(lines[i] + "\n")
		}
		i--
		r := runCLIIn(t, "", args...)
		if r.code != exitOK || r.stdout != want.String() {
			t.Errorf("docs/ledger.md: sweeper %s\n printed %q (exit %d, stderr %q)\n docs/ledger.md says %q", line, r.stdout, r.code, r.stderr, want.String())
		}
		examples++
	}
	if examples < 2 || !strings.Contains(section, "$ sweeper hash '") || !strings.Contains(section, "$ sweeper hash --canonical '") {
		t.Fatalf("docs/ledger.md's Payload hash section has %d example(s), want the hash and the canonical form", examples)
	}
}

// shellWords splits a command line as sh does for words that are plain or
// single-quoted, the only forms README's examples use.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune(`"\$|<>;&`+"`", r):
			t.Fatalf("README example %q: %q needs a shell", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("README example %q: unclosed quote", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
