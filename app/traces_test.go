package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
	"github.com/sweeper/sweeper/testkit/testwait"
)

// TestTracesOfASettleAndANotifyPass: with tracing on, one settle pass and
// one notify pass, on a real database, against a provider whose search
// takes the recipient in its query string and a Slack fake, make the
// spans an operator needs, linked as they happened — the pass, under it
// the provider's lookup, under that its HTTP request; the database's
// statements in the pass's trace; the delivery and its Slack call — and
// no span's name, attributes, events, links or status holds the
// recipient, the payload, the provider's token or Slack's.
func TestTracesOfASettleAndANotifyPass(t *testing.T) {
	t.Parallel()
	const (
		recipient     = "jane.doe+traces@example.com"
		payloadMarker = "payload-marker-7731"
		providerToken = "orders-s3cret-token"
	)
	var mu sync.Mutex
	var queries []url.Values
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"matches":[]}`)
	}))
	t.Cleanup(provider.Close)
	slack := slackfake.New(t)
	env := func(name string) string {
		switch name {
		case config.EnvSlackToken:
			return slackfake.Token
		case config.EnvSlackSigning:
			return "slackfake-signing-secret"
		case "ORDERS_TOKEN":
			return providerToken
		}
		return ""
	}
	cfg, err := config.Parse(fmt.Sprintf(`
[database]
url = %q

[review]
default_owner = "U0DEFAULT1"

[slack]
channel = "C0REVIEW01"
api_url = %q

[providers.orders]
kind = "http"
url = %q
token_env = "ORDERS_TOKEN"
stale_after = "10m"
`, dbtest.NewDatabase(t), slack.URL(), provider.URL+"/lookup"), kinds, env)
	if err != nil {
		t.Fatal(err)
	}
	exporter := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(tracing.Scrub(exporter)), tracing.Resource(nil, "test"))
	t.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck // the spans were read
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, closeApp, err := app.Open(ctx, cfg, app.OpenOptions{Kinds: kinds, Getenv: env, Logger: logger, Tracing: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeApp)
	store := ledger.NewStore(s.Pool, ledger.Native())
	if _, err := store.Claim(ctx, ledger.Attempt{
		OpKey: "traced-1", Workflow: "billing", Provider: "orders", Action: "send_email", Recipient: recipient,
		Payload: json.RawMessage(fmt.Sprintf(`{"template":"receipt","note":%q}`, payloadMarker)),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool.Exec(ctx, `UPDATE ledger.operations SET first_attempt_at = now() - interval '1 hour',
		last_attempt_at = now() - interval '1 hour' WHERE op_key = 'traced-1'`); err != nil {
		t.Fatal(err)
	}
	before := len(exporter.GetSpans())

	sum, err := s.SweepOnce(ctx, app.OnceOptions{})
	if err != nil || sum.Tickets["not_found"] != 1 {
		t.Fatalf("sweep: %+v, %v; want one not_found ticket", sum, err)
	}
	delivery, err := s.Deliver(ctx)
	if err != nil || delivery.Sent != 1 || len(slack.Messages()) != 1 {
		t.Fatalf("deliver: %+v, %v, %d message(s) in Slack; want one sent", delivery, err, len(slack.Messages()))
	}
	mu.Lock()
	if len(queries) != 1 || queries[0].Get("recipient") != recipient {
		t.Fatalf("the provider was asked %v: want one search naming the recipient in its query", queries)
	}
	mu.Unlock()

	spans := exporter.GetSpans()
	if before != 0 {
		t.Errorf("%d span(s) before the passes: work outside a traced pass makes none", before)
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range spans {
		byID[sp.SpanContext.SpanID()] = sp
	}
	// under reports whether sp descends from ancestor.
	under := func(sp, ancestor tracetest.SpanStub) bool {
		for p, ok := sp.Parent.SpanID(), true; ok && p.IsValid(); {
			if p == ancestor.SpanContext.SpanID() {
				return true
			}
			var parent tracetest.SpanStub
			parent, ok = byID[p]
			p = parent.Parent.SpanID()
		}
		return false
	}
	one := func(desc string, match func(tracetest.SpanStub) bool) tracetest.SpanStub {
		t.Helper()
		var found []tracetest.SpanStub
		for _, sp := range spans {
			if match(sp) {
				found = append(found, sp)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d span(s) %s, want 1; spans: %s", len(found), desc, names(spans))
		}
		return found[0]
	}
	named := func(name string) func(tracetest.SpanStub) bool {
		return func(sp tracetest.SpanStub) bool { return sp.Name == name }
	}

	sweep := one("of the sweep pass", named(app.SpanSweepOnce))
	lookup := one("of the lookup", named(providers.SpanLookup))
	if lookup.Parent.SpanID() != sweep.SpanContext.SpanID() {
		t.Error("the lookup's span is not the sweep pass's child")
	}
	for key, want := range map[attribute.Key]string{
		providers.AttrProvider: "orders", providers.AttrKind: "http", providers.AttrOperations: "1", providers.AttrOutcome: "not_found",
	} {
		if got := attr(lookup, key); got != want {
			t.Errorf("lookup span: %s = %q, want %q", key, got, want)
		}
	}
	providerHTTP := one("of the provider's HTTP request", func(sp tracetest.SpanStub) bool {
		return sp.SpanKind == trace.SpanKindClient && strings.Contains(attr(sp, "url.full"), "/lookup")
	})
	if providerHTTP.Parent.SpanID() != lookup.SpanContext.SpanID() {
		t.Error("the provider's HTTP span is not the lookup's child")
	}
	if got := attr(providerHTTP, "http.response.status_code"); got != "200" {
		t.Errorf("the provider's HTTP span: status code %q, want 200", got)
	}

	deliver := one("of the delivery pass", named(app.SpanDeliver))
	slackPost := one("of the Slack post", func(sp tracetest.SpanStub) bool {
		return sp.SpanKind == trace.SpanKindClient && strings.Contains(attr(sp, "url.full"), "/chat.postMessage")
	})
	if !under(slackPost, deliver) {
		t.Error("the Slack post's span is not under the delivery pass")
	}

	for _, pass := range []tracetest.SpanStub{sweep, deliver} {
		statements := 0
		for _, sp := range spans {
			if attr(sp, "db.system.name") != "postgresql" || !under(sp, pass) {
				continue
			}
			statements++
			if attr(sp, "db.query.text") == "" || attr(sp, "db.operation.name") != sp.Name {
				t.Errorf("database span %q: query %q, operation %q", sp.Name, attr(sp, "db.query.text"), attr(sp, "db.operation.name"))
			}
		}
		if statements == 0 {
			t.Errorf("no database span under %s", pass.Name)
		}
	}

	// Nothing an operation or a secret holds is in any span.
	forbidden := []string{recipient, url.QueryEscape(recipient), "jane.doe", payloadMarker, providerToken, slackfake.Token, "slackfake-signing-secret"}
	for _, sp := range spans {
		for _, text := range spanText(sp) {
			for _, f := range forbidden {
				if strings.Contains(text, f) {
					t.Errorf("span %q holds %q: %s", sp.Name, f, text)
				}
			}
		}
	}
}

// TestTracesOfRiverJobs: in the daemon, each job worked is a span (River's
// middleware): the sweep job's, and the lookup job it enqueued, linked to
// the sweep that enqueued it; the provider's lookup and the database's
// statements are the lookup job's children. River's own polling, outside
// any job, makes no database span.
func TestTracesOfRiverJobs(t *testing.T) {
	t.Parallel()
	exporter := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(tracing.Scrub(exporter)), tracing.Resource(nil, "test"))
	t.Cleanup(func() { tr.Shutdown(context.Background()) }) //nolint:errcheck // the spans were read
	dbURL := dbtest.NewDatabase(t)
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	poolCfg.ConnConfig.Tracer = tr.QueryTracer()
	pool, err := pgxpool.NewWithConfig(context.Background(), poolCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := wire(t, dbURL, baseConfig, nil)
	b.pool, b.sweeper.Pool, b.ledger = pool, pool, ledger.NewStore(pool, ledger.Native())
	b.sweeper.Tracing = tr
	b.sweeper.Providers["sim"].SetTracer(tr.Tracer("test"))
	b.claim(t, "found-1", "sim", time.Hour)
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, []string{"found-1"}, 20*time.Second)
	// The operation settles in the lookup job's transaction; the job's
	// span ends once River has recorded the job's completion, after it.
	testwait.Until(t, 10*time.Second, "the lookup job's span", func() bool {
		for _, sp := range exporter.GetSpans() {
			if sp.Name == "river.work/lookup_batch" {
				return true
			}
		}
		return false
	})

	spans := exporter.GetSpans()
	var sweep, lookupJob, lookup []tracetest.SpanStub
	for _, sp := range spans {
		switch sp.Name {
		case "river.work/sweep":
			sweep = append(sweep, sp)
		case "river.work/lookup_batch":
			lookupJob = append(lookupJob, sp)
		case providers.SpanLookup, providers.SpanLookupBatch:
			lookup = append(lookup, sp)
		}
	}
	if len(sweep) != 1 || len(lookupJob) != 1 || len(lookup) != 1 {
		t.Fatalf("%d sweep job span(s), %d lookup job span(s), %d lookup span(s), want 1 each; spans: %s",
			len(sweep), len(lookupJob), len(lookup), names(spans))
	}
	job := lookupJob[0]
	if lookup[0].Parent.SpanID() != job.SpanContext.SpanID() {
		t.Error("the provider's lookup is not the lookup job's child")
	}
	if len(job.Links) != 1 || job.Links[0].SpanContext.TraceID() != sweep[0].SpanContext.TraceID() {
		t.Errorf("the lookup job's span links %v, want the sweep job's trace %s", job.Links, sweep[0].SpanContext.TraceID())
	}
	statements := map[trace.SpanID]int{}
	for _, sp := range spans {
		if attr(sp, "db.system.name") != "postgresql" {
			continue
		}
		if !sp.Parent.IsValid() {
			t.Errorf("database span %q has no parent: only statements of traced work are spans", sp.Name)
			continue
		}
		statements[sp.Parent.SpanID()]++
	}
	for _, work := range []tracetest.SpanStub{sweep[0], job} {
		if statements[work.SpanContext.SpanID()] == 0 {
			t.Errorf("no database span is %s's child", work.Name)
		}
	}
}

// attr is the value of sp's attribute key, as text; "" when it has none.
func attr(sp tracetest.SpanStub, key attribute.Key) string {
	for _, a := range sp.Attributes {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// spanText is every text an exported span carries: its name, status,
// attributes, events and links.
func spanText(sp tracetest.SpanStub) []string {
	out := []string{sp.Name, sp.Status.Description}
	kv := func(attrs []attribute.KeyValue) {
		for _, a := range attrs {
			out = append(out, string(a.Key)+"="+a.Value.String())
		}
	}
	kv(sp.Attributes)
	for _, e := range sp.Events {
		out = append(out, e.Name)
		kv(e.Attributes)
	}
	for _, l := range sp.Links {
		kv(l.Attributes)
	}
	return out
}

func names(spans tracetest.SpanStubs) string {
	var out []string
	for _, sp := range spans {
		out = append(out, sp.Name)
	}
	return strings.Join(out, ", ")
}
