package providers

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// SetTracer has each later request to the adapter traced by tracer (nil:
// none): a span around each request sent, its wait for a slot and the rate
// limit included, holding the provider's name and kind, how many
// operations it asks for and how it ended; the adapter's HTTP exchanges,
// made under it, are its children. A request that is paced — held by the
// rate limit, the concurrency cap or the provider being down — asks
// nobody and makes no span: during an outage the spans are the probes'
// (each saying how many operations waited since the previous one, in this
// process: [EventOutage]). Call it before the provider is used: it is not
// synchronized with Lookup.
func (p *Provider) SetTracer(tracer trace.Tracer) { p.tracer = tracer }

// Span names: one request to the adapter for one operation, or for a
// batch of them.
const (
	SpanLookup      = "sweeper.provider.lookup"
	SpanLookupBatch = "sweeper.provider.lookup_batch"
)

// The span attributes of a request to an adapter. No recipient, op_key,
// payload or record: what was asked and what came back stay out of traces.
const (
	AttrProvider   = "sweeper.provider.name"
	AttrKind       = "sweeper.provider.kind"
	AttrOperations = "sweeper.lookup.operations"
	AttrOutcome    = "sweeper.lookup.outcome"
	// AttrProbe marks the one request asking a provider that is down.
	AttrProbe = "sweeper.lookup.probe"
	// AttrWaited is how many operations' requests this process paced
	// because the provider was down, since its previous probe.
	AttrWaited = "sweeper.outage.waited"
)

// EventOutage is the event of a probe's span: the outage it asks about,
// with [AttrWaited].
const EventOutage = "sweeper.outage"

// traceRequest starts the span of one request to the adapter for n
// operations, named name, begun at start, when the provider has a tracer;
// a probe's span holds the outage's event. end records the request's
// outcome — outcomeOf its records and error — and ends the span.
func (p *Provider) traceRequest(ctx context.Context, name string, n int, start time.Time, probe bool) (_ context.Context, end func(outcome string)) {
	if p.tracer == nil {
		return ctx, func(string) {}
	}
	ctx, span := p.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String(AttrProvider, p.Name),
		attribute.String(AttrKind, p.Kind),
		attribute.Int(AttrOperations, n),
	))
	if probe {
		span.SetAttributes(attribute.Bool(AttrProbe, true))
		span.AddEvent(EventOutage, trace.WithAttributes(attribute.Int64(AttrWaited, p.waited.Swap(0))))
	}
	return ctx, func(outcome string) {
		span.SetAttributes(attribute.String(AttrOutcome, outcome))
		switch outcome {
		case "transient", "permanent", "rate_limited":
			// The class alone: an error's text stays in the logs, where it
			// is redacted for the one recipient it may quote.
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
	}
}

// outcomeOf names how a request ended for a span: the class of err
// (transient, rate_limited, permanent, unsupported), canceled when
// the caller gave up, else by its records: not_found, found or multiple.
// A batch request that was answered is "answered".
func outcomeOf(records []Record, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case err != nil:
		class, _ := Classify(err)
		return class.String()
	}
	switch len(records) {
	case 0:
		return "not_found"
	case 1:
		return "found"
	}
	return "multiple"
}
