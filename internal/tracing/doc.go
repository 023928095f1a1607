// Package tracing is sweeper's OpenTelemetry traces, for operators who run
// a collector: off unless the standard variables name an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and
// then exported over OTLP/HTTP, which reads its own variables (headers,
// protocol, timeout, TLS).
//
// Off costs nothing: [Start] returns a nil *Tracing, whose methods hand
// back what they were given (a transport as it is, no query tracer, no
// River middleware) or a no-op tracer; no exporter is built and no
// goroutine started. The process-wide tracer provider and propagator are
// never set — each instrumented part is handed the provider explicitly —
// and only when on is the global error handler pointed at the log, for
// the exporter's failures.
//
// No span carries a recipient, a payload, a secret or a token: the
// instrumented parts record none, the database spans keep the SQL text but
// never its arguments, and every span passes through [Scrub] before it is
// exported, which cuts query strings and credentials out of every URL it
// holds (a provider's search names the recipient in its query: Twilio's
// To=, Postmark's recipient=, Mailgun's to=).
package tracing
