package tracing

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// dbTracerName names the tracer of the database spans.
const dbTracerName = "github.com/sweeper/sweeper/internal/tracing"

// DB is a pgx tracer, set on a pool's connection config: a client span for
// each query, Exec and batch made within a traced piece of work (a River
// job, a pass of a command), named by its operation (SELECT, UPDATE, …),
// with db.system.name=postgresql, db.operation.name and the SQL text as
// db.query.text — never the arguments, which hold the recipients and
// payloads the statement binds. A failed statement's status is its
// SQLSTATE alone: PostgreSQL's messages can quote a value. Calls outside
// any span (River's own polling) make none.
type DB struct {
	tracer trace.Tracer
}

var (
	_ pgx.QueryTracer = (*DB)(nil)
	_ pgx.BatchTracer = (*DB)(nil)
)

// dbSpanKey marks the context of a span DB started, so that its end
// never ends the caller's.
type dbSpanKey struct{}

// start starts a span under ctx's, if ctx has one.
func (d *DB) start(ctx context.Context, name string, attrs ...attribute.KeyValue) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	ctx, span := d.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, attribute.String("db.system.name", "postgresql"))...))
	return context.WithValue(ctx, dbSpanKey{}, span)
}

// end ends the span start started in ctx, if it did, with err's SQLSTATE.
func (d *DB) end(ctx context.Context, err error) {
	span, ok := ctx.Value(dbSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	if err != nil {
		class := "error"
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
			class = pgErr.Code
			span.SetAttributes(attribute.String("db.response.status_code", pgErr.Code))
		} else if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			class = "canceled"
		}
		span.SetAttributes(attribute.String("error.type", class))
		span.SetStatus(codes.Error, class)
	}
	span.End()
}

// TraceQueryStart implements pgx.QueryTracer.
func (d *DB) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	op := Operation(data.SQL)
	return d.start(ctx, op,
		attribute.String("db.operation.name", op),
		attribute.String("db.query.text", data.SQL))
}

// TraceQueryEnd implements pgx.QueryTracer.
func (d *DB) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	d.end(ctx, data.Err)
}

// TraceBatchStart implements pgx.BatchTracer: one span for the batch.
func (d *DB) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	size := 0
	if data.Batch != nil {
		size = data.Batch.Len()
	}
	return d.start(ctx, "BATCH",
		attribute.String("db.operation.name", "BATCH"),
		attribute.Int("db.operation.batch.size", size))
}

// TraceBatchQuery implements pgx.BatchTracer: each statement of the batch
// is an event holding its SQL text.
func (d *DB) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	span, ok := ctx.Value(dbSpanKey{}).(trace.Span)
	if !ok {
		return
	}
	span.AddEvent("query", trace.WithAttributes(
		attribute.String("db.operation.name", Operation(data.SQL)),
		attribute.String("db.query.text", data.SQL)))
}

// TraceBatchEnd implements pgx.BatchTracer.
func (d *DB) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	d.end(ctx, data.Err)
}

// Operation is a statement's operation name, its first keyword upper-cased
// (SELECT, INSERT, WITH, BEGIN, …), or "SQL" when it starts with none.
func Operation(sql string) string {
	sql = strings.TrimLeft(sql, " \t\r\n(")
	for strings.HasPrefix(sql, "--") {
		// A leading comment line.
		_, rest, ok := strings.Cut(sql, "\n")
		if !ok {
			return "SQL"
		}
		sql = strings.TrimLeft(rest, " \t\r\n(")
	}
	end := strings.IndexFunc(sql, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_')
	})
	if end < 0 {
		end = len(sql)
	}
	if end == 0 {
		return "SQL"
	}
	return strings.ToUpper(sql[:end])
}
