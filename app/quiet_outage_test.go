package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestOutageThroughRiverIsQuiet: in the daemon, twenty operations wait
// through an outage of a provider answering HTTP 503. Their lookup jobs
// wake while it lasts, but a lookup the outage paces makes no span and no
// statement: the spans while it is down are the probes' and the jobs'
// runs — a few for each probe — not one for each paced lookup and
// statement.
func TestOutageThroughRiverIsQuiet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const outageAfter = 3
	var received atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// The first failures, then the first probe; the second probe is
		// answered, and everything after it.
		if received.Add(1) <= outageAfter+1 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"matches":[]}`)
	}))
	t.Cleanup(server.Close)

	exporter := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(tracing.Scrub(exporter)), tracing.Resource(nil, "test"))
	t.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck // the spans were read
	dbURL := dbtest.NewDatabase(t)
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	poolCfg.ConnConfig.Tracer = tr.QueryTracer()
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := wire(t, dbURL, baseConfig+fmt.Sprintf(`
[providers.answers]
kind = "http"
url = %q
stale_after = "10m"
lookup_timeout = "2s"
lookup_budget = "10m"
rate_limit = 1000.0
concurrency = 20
outage_after = %d
`, server.URL+"/lookup", outageAfter), nil)
	b.pool, b.sweeper.Pool, b.ledger = pool, pool, ledger.NewStore(pool, ledger.Native())
	b.sweeper.Tracing = tr
	b.sweeper.Providers["answers"].SetTracer(tr.Tracer("test"))
	b.sweeper.TrackHealth()
	client := b.startClient(t)

	var keys []string
	for i := range outageAfter {
		keys = append(keys, b.claim(t, fmt.Sprintf("first-%d", i), "answers", stale).OpKey)
	}
	b.sweep(t, client)
	state := func() string {
		var s string
		_ = b.pool.QueryRow(ctx, `SELECT state FROM sweeper.provider_health WHERE provider = 'answers'`).Scan(&s)
		return s
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for state() != want {
			if time.Now().After(deadline) {
				t.Fatalf("the provider is not %s after a minute", want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("down")
	start, before := time.Now(), len(exporter.GetSpans())
	for i := range 17 {
		keys = append(keys, b.claim(t, fmt.Sprintf("waiting-%02d", i), "answers", stale).OpKey)
	}
	b.sweep(t, client)
	waitFor("up")
	b.waitSettled(t, keys, time.Minute)
	// While down: what began after the outage was seen and before the
	// probe that brought it up reported (its own span ends after). A span
	// of the failures that made the outage can end after it was seen: it
	// began before, and is not counted.
	var upAt time.Time
	if err := b.pool.QueryRow(ctx, `SELECT since FROM sweeper.provider_health WHERE provider = 'answers'`).Scan(&upAt); err != nil {
		t.Fatal(err)
	}
	outage := upAt.Sub(start)
	var during []tracetest.SpanStub
	for _, sp := range exporter.GetSpans()[before:] {
		if !sp.StartTime.Before(start) && sp.StartTime.Before(upAt) {
			during = append(during, sp)
		}
	}

	byName := map[string]int{}
	probes, rateStatements, healthWrites, healthReads := 0, 0, 0, 0
	for _, sp := range during {
		byName[sp.Name]++
		for _, a := range sp.Attributes {
			switch {
			case a.Key == providers.AttrProbe && a.Value.AsBool():
				probes++
			case a.Key == "db.query.text" && strings.Contains(a.Value.AsString(), "sweeper.provider_rate"):
				rateStatements++
			case a.Key == "db.query.text" && strings.Contains(a.Value.AsString(), "sweeper.provider_health") && sp.Name == "SELECT":
				healthReads++
			case a.Key == "db.query.text" && strings.Contains(a.Value.AsString(), "sweeper.provider_health"):
				healthWrites++
			}
		}
	}
	t.Logf("outage %s: %d spans while down, %d requests received in all, %d probes; statements on provider_rate %d, provider_health %d writes, %d reads: %v",
		outage.Round(time.Second), len(during), received.Load(), probes, rateStatements, healthWrites, healthReads, byName)
	if probes != 2 {
		t.Errorf("%d probe spans while down; want 2", probes)
	}
	if n := byName[providers.SpanLookup] + byName[providers.SpanLookupBatch]; n != probes {
		t.Errorf("%d lookup spans while down; want the %d probes' alone: a paced lookup makes none", n, probes)
	}
	// Each probe takes a token, its turn and reports; the state is read
	// at most once a second.
	seconds := int(outage/time.Second) + 1
	if rateStatements > probes || healthWrites > 2*probes || healthReads > seconds+2 {
		t.Errorf("while down: %d statements on the rate limit, %d writes and %d reads of the health for %d probes in %s; a paced lookup makes none",
			rateStatements, healthWrites, healthReads, probes, outage.Round(time.Second))
	}
	// A job wakes when a probe is due, and each second while it is in
	// flight: a few runs for each probe, not one a second.
	if runs := byName["river.work/lookup_batch"]; runs > 4*(probes+1)*2 {
		t.Errorf("%d lookup job runs while down, for two jobs and %d probes; want a few per probe", runs, probes)
	}
}
