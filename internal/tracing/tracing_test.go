package tracing_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/sweeper/sweeper/internal/tracing"
)

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// TestTracesOffWithoutVariables: without the standard variables nothing is
// built or started — no exporter, no goroutine — the global provider stays
// the no-op one, and every instrumented part gets what it had.
func TestTracesOffWithoutVariables(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	global := otel.GetTracerProvider()
	for _, vars := range []map[string]string{
		nil,
		{"OTEL_SERVICE_NAME": "sweeper-eu", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
	} {
		if s := tracing.FromEnv(env(vars)); s.On || s.Off == "" {
			t.Errorf("%v: settings %+v, want off with a reason", vars, s)
		}
		tr, err := tracing.Start(t.Context(), env(vars), "v1.0.0", nil)
		if err != nil || tr != nil {
			t.Fatalf("%v: Start = %v, %v; want nil, nil", vars, tr, err)
		}
		if tr.On() {
			t.Error("a nil Tracing is on")
		}
		rt := http.RoundTripper(&http.Transport{})
		if got := tr.Transport(rt); got != rt {
			t.Errorf("off: Transport wrapped the transport: %T", got)
		}
		if tr.QueryTracer() != nil || tr.RiverMiddleware() != nil {
			t.Error("off: a query tracer or a River middleware")
		}
		if _, span := tr.Tracer("x").Start(t.Context(), "x"); span.IsRecording() || span.SpanContext().IsValid() {
			t.Error("off: a span that records")
		}
		if err := tr.Shutdown(t.Context()); err != nil {
			t.Errorf("off: Shutdown: %v", err)
		}
	}
	if otel.GetTracerProvider() != global {
		t.Errorf("the global tracer provider changed: %T", otel.GetTracerProvider())
	}
}

// TestTracesExportedOverOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans
// reach the collector over OTLP/HTTP at /v1/traces when the tracing shuts
// down, under service.name "sweeper" and the binary's version, with the
// headers of OTEL_EXPORTER_OTLP_HEADERS; the global provider is left alone.
func TestTracesExportedOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	var paths, auths []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies, paths, auths = append(bodies, body), append(paths, r.Method+" "+r.URL.Path), append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer c0llector")
	global := otel.GetTracerProvider()

	tr, err := tracing.Start(t.Context(), os.Getenv, "v9.8.7", nil)
	if err != nil || tr == nil {
		t.Fatalf("Start = %v, %v", tr, err)
	}
	_, span := tr.Tracer("test").Start(t.Context(), "a-span-to-export")
	span.End()
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) == 0 {
		t.Fatal("the collector received nothing")
	}
	all := bytes.Join(bodies, nil)
	for _, want := range []string{"a-span-to-export", "sweeper", "v9.8.7"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the export holds no %q", want)
		}
	}
	if paths[0] != "POST /v1/traces" || auths[0] != "Bearer c0llector" {
		t.Errorf("export: %s with Authorization %q, want POST /v1/traces with the configured header", paths[0], auths[0])
	}
	if otel.GetTracerProvider() != global {
		t.Errorf("the global tracer provider changed: %T", otel.GetTracerProvider())
	}
}

// TestScrub: what reaches the exporter holds no URL's query string,
// credentials or fragment — in the span's name, attributes, events, links
// or status — and no url.query attribute; the rest is kept.
func TestScrub(t *testing.T) {
	t.Parallel()
	exporter := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(tracing.Scrub(exporter)), tracing.Resource(nil, "test"))
	const secret = "jane.doe%40example.com"
	_, span := tr.Tracer("test").Start(t.Context(), "GET https://api.example/x?To="+secret,
		trace.WithLinks(trace.Link{Attributes: []attribute.KeyValue{attribute.String("u", "https://h/?to="+secret)}}))
	span.SetAttributes(
		attribute.String("url.full", "https://user:pa55@api.twilio.example/2010-04-01/Messages.json?To="+secret+"&PageSize=50#frag"),
		attribute.String("url.query", "To="+secret),
		attribute.StringSlice("urls", []string{"http://h/a?recipient=" + secret, "postgres://root:pa55@db/x?sslmode=disable"}),
		attribute.String("server.address", "api.twilio.example"),
	)
	span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.message",
		`Get "https://api.postmark.example/messages/outbound?recipient=`+secret+`": EOF`)))
	span.SetStatus(codes.Error, `Get "https://h/?to=`+secret+`" (x)`)
	span.End() // exported at once, by the simple span processor
	spans := exporter.GetSpans()
	defer tr.Shutdown(context.Background()) //nolint:errcheck // spans were read
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	text := s.Name + " " + s.Status.Description
	attrs := map[attribute.Key]attribute.Value{}
	for _, a := range s.Attributes {
		attrs[a.Key] = a.Value
		text += " " + a.Value.String()
	}
	for _, e := range s.Events {
		text += " " + e.Name
		for _, a := range e.Attributes {
			text += " " + a.Value.String()
		}
	}
	for _, l := range s.Links {
		for _, a := range l.Attributes {
			text += " " + a.Value.String()
		}
	}
	for _, leak := range []string{secret, "pa55", "user", "frag", "PageSize", "sslmode"} {
		if strings.Contains(text, leak) {
			t.Errorf("exported span holds %q: %s", leak, text)
		}
	}
	if _, ok := attrs["url.query"]; ok {
		t.Error("url.query was exported")
	}
	for key, want := range map[attribute.Key]string{
		"url.full":       "https://api.twilio.example/2010-04-01/Messages.json",
		"server.address": "api.twilio.example",
		"urls":           `["http://h/a","postgres://db/x"]`,
	} {
		if got := attrs[key].String(); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	if want := `Get "https://h/" (x)`; s.Status.Description != want {
		t.Errorf("status %q, want %q", s.Status.Description, want)
	}
}

func TestOperation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ desc, sql, want string }{
		{"a select", "SELECT 1", "SELECT"},
		{"lower case, leading space", "\n\t  update ledger.operations SET x = $1", "UPDATE"},
		{"a CTE", "WITH moved AS (UPDATE x) SELECT 1", "WITH"},
		{"a leading comment", "-- name: claim\nINSERT INTO t VALUES ($1)", "INSERT"},
		{"a parenthesised select", "(SELECT 1) UNION (SELECT 2)", "SELECT"},
		{"only a comment", "-- nothing", "SQL"},
		{"empty", "", "SQL"},
		{"a literal first", "'x'", "SQL"},
	} {
		if got := tracing.Operation(tc.sql); got != tc.want {
			t.Errorf("%s: Operation(%q) = %q, want %q", tc.desc, tc.sql, got, tc.want)
		}
	}
}
