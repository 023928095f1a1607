package tracing

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The standard variables that decide whether traces are on.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvServiceName    = "OTEL_SERVICE_NAME"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is not set.
const DefaultServiceName = "sweeper"

// ShutdownTimeout bounds how long [Tracing.Shutdown] waits for the last
// spans to reach the collector when its caller gives no shorter deadline:
// a collector that is down does not hold a stopping process.
const ShutdownTimeout = 5 * time.Second

// Settings are what the standard variables say about traces.
type Settings struct {
	// On: an endpoint is set and nothing turns traces off.
	On bool
	// Endpoint is where spans go, safe to print: the traces endpoint as
	// the exporter derives it (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it
	// is, else OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces"), without
	// credentials or query. Empty when off.
	Endpoint string
	// Off says why traces are off, when they are.
	Off string
}

// FromEnv reads the settings from getenv: traces are on when
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set,
// unless OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none.
func FromEnv(getenv func(string) string) Settings {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	traces := strings.TrimSpace(getenv(EnvTracesEndpoint))
	base := strings.TrimSpace(getenv(EnvEndpoint))
	switch {
	case strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true"):
		return Settings{Off: EnvSDKDisabled + " is true"}
	case strings.EqualFold(strings.TrimSpace(getenv(EnvTracesExporter)), "none"):
		return Settings{Off: EnvTracesExporter + " is none"}
	case traces != "":
		return Settings{On: true, Endpoint: PrintableURL(traces)}
	case base != "":
		endpoint := PrintableURL(base)
		if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
			endpoint = u.String()
		}
		return Settings{On: true, Endpoint: endpoint}
	}
	return Settings{Off: "neither " + EnvEndpoint + " nor " + EnvTracesEndpoint + " is set"}
}

// PrintableURL is raw without its credentials, query and fragment, or a
// placeholder when it does not parse as a URL with a host.
func PrintableURL(raw string) string {
	if u, err := url.Parse(raw); err != nil || u.Host == "" {
		return "(an endpoint that does not parse as a URL)"
	}
	return scrubURL(raw)
}

// Tracing is the process's tracer provider, with what the instrumented
// parts take from it. A nil *Tracing is off: every method is safe to call
// on it and costs nothing.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// Start returns the tracing the standard variables ask for (read by
// getenv; the OTLP exporter reads the rest itself from the process's
// environment, so getenv is the process's in production), or nil and no
// error when they ask for none. service.name is OTEL_SERVICE_NAME,
// default "sweeper"; service.version is version. Export errors are
// logged to logger (nil: discarded). The caller calls Shutdown on exit.
func Start(ctx context.Context, getenv func(string) string, version string, logger *slog.Logger) (*Tracing, error) {
	if !FromEnv(getenv).On {
		return nil, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if logger != nil {
		// The exporter reports what it could not send here; the process
		// has no other use for the globals.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			logger.Warn("traces: export failed", "error", err)
		}))
	}
	return New(sdktrace.NewBatchSpanProcessor(Scrub(exporter)), Resource(getenv, version)), nil
}

// Resource is the resource spans are exported with: service.name from
// OTEL_SERVICE_NAME (default "sweeper"), service.version.
func Resource(getenv func(string) string, version string) *resource.Resource {
	name := DefaultServiceName
	if getenv != nil {
		name = cmp.Or(strings.TrimSpace(getenv(EnvServiceName)), name)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		// Only schema URLs can conflict, and ours has none.
		return resource.NewSchemaless(attrs...)
	}
	return res
}

// New returns tracing whose spans go to processor, under res: Start's,
// or a test's over an in-memory exporter. A processor that exports should
// export through [Scrub].
func New(processor sdktrace.SpanProcessor, res *resource.Resource) *Tracing {
	return &Tracing{provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(processor), sdktrace.WithResource(res))}
}

// On reports whether t records spans.
func (t *Tracing) On() bool { return t != nil }

// Provider is t's tracer provider, a no-op one when t is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// Tracer is the tracer named name (the instrumented package's path), a
// no-op one when t is off.
func (t *Tracing) Tracer(name string) trace.Tracer { return t.Provider().Tracer(name) }

// Transport returns rt (http.DefaultTransport when nil) with a client span
// around each request, named by its method and host; rt itself when t is
// off. The span records the URL without its query string, which a
// provider's search fills with the recipient ([Scrub]), and no header or
// body; no trace context is sent to the server, which is a provider or
// Slack, not a service of the operator's.
func (t *Tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return otelhttp.NewTransport(rt,
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return r.Method + " " + r.URL.Hostname()
		}),
	)
}

// QueryTracer is the pgx tracer that records the database calls made
// within a traced piece of work ([DB]); nil when t is off.
func (t *Tracing) QueryTracer() pgx.QueryTracer {
	if t == nil {
		return nil
	}
	return &DB{tracer: t.provider.Tracer(dbTracerName)}
}

// RiverMiddleware is River's OpenTelemetry middleware, a span around each
// job worked (named river.work/KIND, with the job's id, kind, queue and
// attempt, never its args) and each insert; nil when t is off. The
// enqueuing span's context travels in the job's metadata and becomes a
// link of the work span.
func (t *Tracing) RiverMiddleware() rivertype.Middleware {
	if t == nil {
		return nil
	}
	return otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider:              t.provider,
		MeterProvider:               metricnoop.NewMeterProvider(),
		EnableWorkSpanJobKindSuffix: true,
		EnableTracePropagation:      true,
	})
}

// Shutdown sends the spans still held and stops the exporter, within ctx
// and at most [ShutdownTimeout]. Nothing to do when t is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	return nil
}
