package health_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// statements counts the statements sent through a pool, writes apart,
// and passes each on to next (the database spans), if any.
type statements struct {
	next          pgx.QueryTracer
	reads, writes atomic.Int64
}

func (s *statements) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	switch tracing.Operation(data.SQL) {
	case "SELECT":
		s.reads.Add(1)
	default:
		s.writes.Add(1)
	}
	if s.next == nil {
		return ctx
	}
	return s.next.TraceQueryStart(ctx, conn, data)
}

func (s *statements) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if s.next != nil {
		s.next.TraceQueryEnd(ctx, conn, data)
	}
}

// TestOutageIsQuiet: twenty operations wait through an outage of a
// provider answering HTTP 503, each asking again every 200 ms — far more
// often than any job would. The lookups the outage paces (hundreds) make
// no span and no database statement: the spans are one per request the
// provider received (the three failures that take it down, two probes,
// the operations asked once it is up), each with the statements of its
// own report beneath it; the first probe's span says how many operations
// waited before it. The statements are a few per request the provider
// received plus at most a cached read a second.
func TestOutageIsQuiet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const outageAfter, ops, every = 3, 20, 200 * time.Millisecond

	// The provider fails the three first requests and the first probe,
	// and answers from the second probe on: the only requests sent
	// while it is down are probes.
	var received atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if received.Add(1) <= outageAfter+1 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"matches":[]}`)
	}))
	t.Cleanup(server.Close)

	exporter := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(exporter), tracing.Resource(nil, "test"))
	t.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck // the spans were read
	counted := &statements{next: tr.QueryTracer()}
	cfg, err := pgxpool.ParseConfig(dbtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = counted
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	tracker := health.NewTracker(pool, "mailer", outageAfter, time.Minute)
	down := make(chan struct{})
	tracker.OnDown = func(context.Context, string) { close(down) }
	up := make(chan struct{})
	tracker.OnUp = func(context.Context) { close(up) }
	p := providers.NewProvider("mailer", "http", refusingAdapter{server.URL}, providers.Limits{
		StaleAfter: time.Minute, LookupTimeout: 10 * time.Second, LookupBudget: time.Hour,
		RateLimit: 1000, Concurrency: ops, OutageAfter: outageAfter,
	})
	p.SetHealth(tracker)
	p.SetSharedRate(health.NewRate(pool, "mailer", 1000, 1000))
	p.SetTracer(tr.Tracer("test"))

	var paced atomic.Int64
	var wg sync.WaitGroup
	// settle asks for op until the provider answers it. The first
	// operations ask again only once the provider is down: on a loaded
	// machine the third failure's report can take longer than every, and
	// a retry sent before it would be a fourth failure, not a probe.
	settle := func(op string, first bool) {
		for {
			_, err := p.Lookup(ctx, providers.Query{OpKey: op, Action: "send_email"})
			if err == nil {
				return
			}
			if first {
				<-down
				first = false
			}
			if class, _ := providers.Classify(err); class == providers.ClassPaced {
				paced.Add(1)
			} else if class != providers.ClassTransient {
				t.Errorf("Lookup(%s) = %v; want paced or transient", op, err)
				return
			}
			time.Sleep(every)
		}
	}
	for i := range outageAfter {
		wg.Go(func() { settle(fmt.Sprintf("op-%02d", i), true) })
	}
	select {
	case <-down:
	case <-time.After(time.Minute):
		t.Fatal("the provider is not down after its first failures")
	}
	start := time.Now()
	reads0, writes0 := counted.reads.Load(), counted.writes.Load()
	for i := outageAfter; i < ops; i++ {
		wg.Go(func() { settle(fmt.Sprintf("op-%02d", i), false) })
	}
	select {
	case <-up:
	case <-time.After(time.Minute):
		t.Fatal("the provider is not up a minute after it went down")
	}
	outage := time.Since(start)
	reads, writes := counted.reads.Load()-reads0, counted.writes.Load()-writes0
	wg.Wait()

	requests := int(received.Load())
	var lookups, probes, roots int
	var waited []int64
	for _, sp := range exporter.GetSpans() {
		if !sp.Parent.IsValid() {
			roots++
		}
		if sp.Name != providers.SpanLookup {
			continue
		}
		lookups++
		for _, a := range sp.Attributes {
			if a.Key == providers.AttrProbe && a.Value.AsBool() {
				probes++
			}
		}
		for _, ev := range sp.Events {
			if ev.Name != providers.EventOutage {
				continue
			}
			for _, a := range ev.Attributes {
				if a.Key == providers.AttrWaited {
					waited = append(waited, a.Value.AsInt64())
				}
			}
		}
	}
	t.Logf("outage %s: %d lookups paced, %d requests received, %d probes, %d spans; during it %d reads, %d writes",
		outage.Round(time.Second), paced.Load(), requests, probes, len(exporter.GetSpans()), reads, writes)
	if paced.Load() < 10*int64(requests) {
		t.Fatalf("%d lookups paced for %d requests: the outage did not pace enough to tell", paced.Load(), requests)
	}
	if want := outageAfter + 2 + ops - 1; requests != want {
		t.Errorf("the provider received %d requests, want %d: three failures, two probes, the others once up", requests, want)
	}
	if lookups != requests || roots != requests {
		t.Errorf("%d lookup spans, %d root spans for %d requests received: a paced lookup makes no span", lookups, roots, requests)
	}
	if probes != 2 || len(waited) != 2 || waited[0] == 0 || waited[0]+waited[1] > paced.Load() {
		t.Errorf("%d probe spans saying %v waited (of %d paced); want two, the first saying how many waited before it", probes, waited, paced.Load())
	}
	// During the outage: the probes' own statements (the rate limit's
	// token, the turn, whether a failed probe's operation fails alone, the
	// report) and a cached read a second.
	seconds := int64(outage/time.Second) + 1
	if writes > 4*int64(probes) || reads > 2*seconds+4 {
		t.Errorf("during the outage %d writes and %d reads for %d paced lookups and 2 probes; want the probes' alone and a read a second",
			writes, reads, paced.Load())
	}
}
