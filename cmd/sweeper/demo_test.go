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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/pgtemp"
)

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
	// Built as binary and make lint's vet build (-trimpath, no cgo): the
	// copy's packages are then the build cache's, whatever directory they
	// sit in, and the command links rather than compiles the module again.
	cmd.Env = append(environWithout(os.Environ(), config.EnvDatabaseURL, "GOFLAGS", "CGO_ENABLED", pgtemp.EnvBinDir),
		"GOFLAGS=-trimpath", "CGO_ENABLED=0")
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
