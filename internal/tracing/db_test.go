package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// TestDBSpans: on a real database, a statement made within a span is a
// client span named by its operation, with db.system.name=postgresql and
// its SQL text, never its arguments; a failed one's status is its SQLSTATE,
// never PostgreSQL's message, which quotes the value; a batch is one span,
// its statements events; a statement outside any span makes none.
func TestDBSpans(t *testing.T) {
	t.Parallel()
	exporter := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.NewSimpleSpanProcessor(tracing.Scrub(exporter)), tracing.Resource(nil, "test"))
	defer tr.Shutdown(context.Background()) //nolint:errcheck // spans are read before
	cfg, err := pgxpool.ParseConfig(dbtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tr.QueryTracer()
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	const secret = "jane.doe@example.com"

	var got string
	if err := pool.QueryRow(t.Context(), "SELECT $1::text", secret).Scan(&got); err != nil || got != secret {
		t.Fatalf("outside a span: %q, %v", got, err)
	}
	if n := len(exporter.GetSpans()); n != 0 {
		t.Fatalf("%d span(s) for a statement outside any span, want 0", n)
	}

	ctx, parent := tr.Tracer("test").Start(t.Context(), "work")
	if err := pool.QueryRow(ctx, "SELECT $1::text", secret).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT '"+secret+"'::int"); err == nil {
		t.Fatal("a text cast to int did not fail")
	}
	batch := &pgx.Batch{}
	batch.Queue("SELECT $1::text", secret)
	batch.Queue("UPDATE pg_catalog.pg_class SET relname = relname WHERE false")
	if err := pool.SendBatch(ctx, batch).Close(); err != nil {
		t.Fatal(err)
	}
	parent.End()

	spans := exporter.GetSpans()
	var statements []tracetest.SpanStub
	for _, sp := range spans {
		if sp.Name != "work" {
			statements = append(statements, sp)
		}
	}
	if len(statements) != 3 {
		t.Fatalf("%d statement span(s), want 3: %s", len(statements), spanNames(spans))
	}
	for i, want := range []struct{ name, status, batchSize string }{
		{"SELECT", "", ""}, {"SELECT", "22P02", ""}, {"BATCH", "", "2"},
	} {
		sp := statements[i]
		if sp.Name != want.name || sp.SpanKind != trace.SpanKindClient || sp.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d: %q, kind %v, want %q, a client span under the work's", i, sp.Name, sp.SpanKind, want.name)
		}
		if got := valueOf(sp, "db.system.name"); got != "postgresql" {
			t.Errorf("span %d: db.system.name %q", i, got)
		}
		if sp.Status.Description != want.status {
			t.Errorf("span %d: status %q, want %q", i, sp.Status.Description, want.status)
		}
		if got := valueOf(sp, "db.operation.batch.size"); got != want.batchSize {
			t.Errorf("span %d: batch size %q, want %q", i, got, want.batchSize)
		}
	}
	if got := valueOf(statements[0], "db.query.text"); got != "SELECT $1::text" {
		t.Errorf("db.query.text %q, want the statement as written", got)
	}
	if n := len(statements[2].Events); n != 2 {
		t.Errorf("the batch's span has %d event(s), want one per statement", n)
	}
	for _, sp := range statements[:1] {
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.String(), secret) {
				t.Errorf("span %q holds an argument: %s", sp.Name, a.Key)
			}
		}
	}
	for _, e := range statements[2].Events {
		for _, a := range e.Attributes {
			if strings.Contains(a.Value.String(), secret) {
				t.Errorf("the batch's event holds an argument: %s", a.Key)
			}
		}
	}
	if strings.Contains(statements[1].Status.Description, secret) {
		t.Error("the failed statement's status quotes PostgreSQL's message")
	}
}

// valueOf is sp's attribute key as text, "" when it has none.
func valueOf(sp tracetest.SpanStub, key string) string {
	for _, a := range sp.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func spanNames(spans tracetest.SpanStubs) string {
	var out []string
	for _, sp := range spans {
		out = append(out, sp.Name)
	}
	return strings.Join(out, ", ")
}
