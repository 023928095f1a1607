package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/internal/logs"
)

// lockedBuffer is a log the watch and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDatabaseWatchSaysAnOutageOnce: however many probes fail, an outage
// is one WARN when the first fails and one INFO, with how long it lasted,
// when one answers again; River's lines meanwhile are not written at INFO.
func TestDatabaseWatchSaysAnOutageOnce(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	refused := errors.New("connect: connection refused")
	answers := []error{refused, refused, refused, nil, nil}
	probed := make(chan struct{})
	var calls int
	w := &databaseWatch{outage: logs.NewOutage(time.Minute), logger: logger, ping: func(context.Context) error {
		calls++
		if calls == len(answers) {
			close(probed)
		}
		return answers[min(calls, len(answers))-1]
	}}
	river := slog.New(w.outage.Handler(logger.Handler()))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { w.run(stop); close(done) }()
	river.Error("producer: Error fetching jobs", "error", "connect: connection refused") // asks for a probe at once
	<-probed
	close(stop)
	<-done
	got := out.String()
	if n := strings.Count(got, `"level":"WARN","msg":"database unreachable since `); n != 1 {
		t.Errorf("%d WARN lines for one outage, want 1:\n%s", n, got)
	}
	if n := strings.Count(got, `"level":"INFO","msg":"database reachable again","down":"`); n != 1 {
		t.Errorf("%d INFO lines for its end, want 1:\n%s", n, got)
	}
	if strings.Count(got, "\n") != 2 {
		t.Errorf("lines = %q, want the WARN and the INFO alone", got)
	}
}
