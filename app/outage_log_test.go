package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/providers"
)

// lockedBuffer is a log destination safe for the trackers' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines are the JSON log lines written so far whose msg holds about.
func (l *lockedBuffer) lines(t *testing.T, about string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(l.b.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if strings.Contains(m["msg"].(string), about) {
			out = append(out, m)
		}
	}
	return out
}

// TestOutageLoggedOncePerCluster: a provider going down for the cluster is
// one WARN line, from the replica whose failures took it down — with the
// cause, the failure, and how many operations wait on it — and none from
// another replica failing while it is down; its return is one INFO line,
// without an error attribute.
func TestOutageLoggedOncePerCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var up atomic.Bool
	lookup := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			if !up.Load() {
				return nil, providers.Transient(fmt.Errorf("pager: HTTP 503: upstream unavailable"))
			}
			return nil, nil
		},
	}}
	b := setup(t, baseConfig, map[string]*providers.Provider{"pager": fakeProvider("pager", lookup, time.Minute)})
	// A second replica: its own provider and tracker, the same database.
	other := &app.App{Config: b.sweeper.Config, Pool: b.pool,
		Providers: map[string]*providers.Provider{"pager": fakeProvider("pager", lookup, time.Minute)}}
	var logA, logB lockedBuffer
	b.sweeper.Logger = slog.New(slog.NewJSONHandler(&logA, nil))
	other.Logger = slog.New(slog.NewJSONHandler(&logB, nil))
	b.sweeper.TrackHealth()
	other.TrackHealth()

	// Seven operations wait on the provider (stale), two are not stale yet.
	for i := range 7 {
		b.claim(t, fmt.Sprintf("waiting-%d", i), "pager", stale)
	}
	b.claim(t, "fresh-1", "pager", time.Minute)
	b.claim(t, "fresh-2", "pager", time.Minute)

	ask := func(a *app.App, key string) {
		t.Helper()
		a.Providers["pager"].Lookup(ctx, providers.Query{OpKey: key, Since: time.Now().Add(-2 * stale), Until: time.Now()}) //nolint:errcheck // the failure is the point
	}
	for i := range 4 {
		ask(other, fmt.Sprintf("waiting-%d", i)) // one short of its count
	}
	for i := range 5 {
		ask(b.sweeper, fmt.Sprintf("waiting-%d", i))
	}
	// The other replica's fifth failure comes while the provider is down:
	// it changes nothing, and says nothing.
	ask(other, "waiting-5")

	downs := append(logA.lines(t, "provider down"), logB.lines(t, "provider down")...)
	if len(downs) != 1 {
		t.Fatalf("%d 'provider down' lines, want one:\nA: %v\nB: %v", len(downs), logA.lines(t, ""), logB.lines(t, ""))
	}
	want := map[string]any{"level": "WARN", "provider": "pager", "cause": "server_error",
		"error": "pager: HTTP 503: upstream unavailable", "waiting": float64(7), "outage_after": float64(5)}
	for k, v := range want {
		if downs[0][k] != v {
			t.Errorf("the WARN line's %s = %v, want %v: %v", k, downs[0][k], v, downs[0])
		}
	}
	if len(logA.lines(t, "provider down")) != 1 {
		t.Error("the WARN line is not from the replica whose failures took the provider down")
	}

	// The provider answers a probe: one INFO line, no error attribute.
	up.Store(true)
	if _, err := b.pool.Exec(ctx, `UPDATE sweeper.provider_health SET probe_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	ask(other, "waiting-6")
	ask(b.sweeper, "waiting-6")
	ups := append(logA.lines(t, "answers again"), logB.lines(t, "answers again")...)
	if len(ups) != 1 {
		t.Fatalf("%d 'answers again' lines, want one:\nA: %v\nB: %v", len(ups), logA.lines(t, ""), logB.lines(t, ""))
	}
	if _, has := ups[0]["error"]; has || ups[0]["level"] != "INFO" || ups[0]["provider"] != "pager" {
		t.Errorf("the recovery line: %v; want INFO, the provider, no error attribute", ups[0])
	}
}
