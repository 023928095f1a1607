package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

// TestMain runs four tests at once by default (-parallel overrides it): most
// of them wait on real processes, leases and timers, not on the CPU.
func TestMain(m *testing.M) {
	dbtest.Main(m, dbtest.Parallel(4), dbtest.Cleanup(func() {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	}))
}

// binary builds sweeper once per test run and returns its path, for tests
// that need real processes. It is built as the Dockerfile builds it
// (static, no cgo, -trimpath), and so are make lint's vet, the deploy
// package's build from the image's context and TestDemoReadmeFirstCommand's
// `go run`: one compile of every package in the build cache serves them
// all, and this is a link.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "sweeper-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(binDir, "sweeper"), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err, out}
		}
	})
	if buildErr != nil {
		t.Fatalf("build sweeper: %v", buildErr)
	}
	return filepath.Join(binDir, "sweeper")
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// result is what one in-process run of the CLI produced.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the CLI in-process with the given environment only.
func runCLI(t *testing.T, environ map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, func(k string) string { return environ[k] })
	return result{code, stdout.String(), stderr.String()}
}

// skipLong skips a test that runs real processes for a minute or more
// (chaos, kill -9, the demo) under `go test -short`; `make test` runs
// them all.
func skipLong(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long process test: not under -short")
	}
}
