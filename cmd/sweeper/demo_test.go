package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/dbtest"
	"github.com/sweeper/sweeper/internal/pgtemp"
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
	r := runCLI(t, map[string]string{config.EnvDatabaseURL: server}, "demo", "--ops", strconv.Itoa(ops))
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

// TestDemoReadmeFirstCommand runs the first command of the README's first
// sh block — the one a newcomer types — in a clean copy of the repository
// (the files git tracks or would track, no build artefacts), with no
// database configured, so the demo starts and removes a throwaway cluster.
func TestDemoReadmeFirstCommand(t *testing.T) {
	skipLong(t)
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	line := readmeFirstCommand(t, filepath.Join(root, "README.md"))
	if !strings.Contains(line, "demo") {
		t.Fatalf("the README's first command is %q: it should start the demo", line)
	}
	dir := cleanCopy(t, root)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = environWithout(os.Environ(), config.EnvDatabaseURL, "GOFLAGS", pgtemp.EnvBinDir)
	// On timeout, interrupt the whole group (sh, go run, the demo), so the
	// demo removes its cluster as on Ctrl-C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	t.Logf("%q took %s", line, time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%q in a clean copy: %v\nstdout:\n%s\nstderr:\n%s", line, err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"throwaway cluster on 127.0.0.1:", "summary after", "0 pending", "removed the throwaway cluster"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// readmeFirstCommand is the first line of the first ```sh block of the
// README, without its trailing comment.
func readmeFirstCommand(t *testing.T, readme string) string {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inBlock := false
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		switch {
		case !inBlock && text == "```sh":
			inBlock = true
		case inBlock && text == "```":
			t.Fatalf("%s: the first sh block is empty", readme)
		case inBlock && text != "":
			if i := strings.Index(text, " #"); i >= 0 {
				text = strings.TrimSpace(text[:i])
			}
			return text
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s has no ```sh block", readme)
	return ""
}

// cleanCopy copies the files git tracks, and the untracked ones it does not
// ignore, from root into a new directory.
func cleanCopy(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-co", "--exclude-standard", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := t.TempDir()
	copied := 0
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(src, dst, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if copied == 0 {
		t.Fatal("git ls-files listed nothing to copy")
	}
	return dir
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// environWithout is environ with the named variables removed.
func environWithout(environ []string, names ...string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// TestDemoWithoutPostgreSQL: with no server configured and no initdb or
// pg_ctl to be found, the demo says what to install and exits 2, having
// installed and started nothing.
func TestDemoWithoutPostgreSQL(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	nowhere := t.TempDir()
	cmd := exec.Command(bin, "demo")
	cmd.Env = []string{"PATH=" + nowhere, pgtemp.EnvBinDir + "=" + nowhere, "HOME=" + nowhere}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
		t.Fatalf("demo without PostgreSQL: %v, want exit %d\nstdout:\n%s\nstderr:\n%s", err, exitUsage, stdout.String(), stderr.String())
	}
	for _, want := range []string{"apt-get install postgresql", "brew install postgresql", config.EnvDatabaseURL, "nothing is installed for you"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stdout.String(), "summary") {
		t.Errorf("the demo went on without a database:\n%s", stdout.String())
	}
}

func TestDemoUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc     string
		args     []string
		wantCode int
		want     string // in stdout for exit 0, else in stderr
	}{
		{desc: "help", args: []string{"demo", "--help"}, wantCode: exitOK, want: "--timeout"},
		{desc: "too few operations", args: []string{"demo", "--ops", "3"}, wantCode: exitUsage, want: "--ops must be between"},
		{desc: "no timeout", args: []string{"demo", "--timeout", "0s"}, wantCode: exitUsage, want: "--timeout must be positive"},
		{desc: "an argument", args: []string{"demo", "now"}, wantCode: exitUsage, want: `unexpected argument "now"`},
		{desc: "listed in the usage", args: []string{"help"}, wantCode: exitOK, want: "  demo "},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, tt.args...)
			got := r.stdout
			if tt.wantCode != exitOK {
				got = r.stderr
			}
			if r.code != tt.wantCode || !strings.Contains(got, tt.want) {
				t.Errorf("sweeper %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s",
					strings.Join(tt.args, " "), r.code, tt.wantCode, tt.want, r.stdout, r.stderr)
			}
		})
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
