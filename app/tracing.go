package app

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// The tracers of the parts wired here, named by their packages.
const (
	appTracer       = "github.com/sweeper/sweeper/app"
	providersTracer = "github.com/sweeper/sweeper/providers"
)

// The spans of the passes the once-runners make in the foreground (`sweep
// --once`, `escalate --once`, `notify --once`): the root of each pass's
// trace. The daemon's passes are River jobs, whose spans River's
// middleware makes.
const (
	SpanSweepOnce    = "sweeper.sweep_once"
	SpanEscalateOnce = "sweeper.escalate_once"
	SpanRelookupOnce = "sweeper.relookup_once"
	SpanDeliver      = "sweeper.deliver"
)

// pass starts the span of a pass in the foreground, a no-op one when
// tracing is off. end records the pass's error's presence (never its
// text) and ends it.
func (s *App) pass(ctx context.Context, name string) (_ context.Context, end func(err error, attrs ...attribute.KeyValue)) {
	ctx, span := s.Tracing.Tracer(appTracer).Start(ctx, name)
	return ctx, func(err error, attrs ...attribute.KeyValue) {
		span.SetAttributes(attrs...)
		if err != nil {
			span.SetStatus(codes.Error, "the pass ended with an error")
		}
		span.End()
	}
}

// slackHTTPClient is the HTTP client of the calls to Slack when tracing
// is on (each call a client span); nil, the callers' default, when off.
func (s *App) slackHTTPClient() *http.Client {
	if !s.Tracing.On() {
		return nil
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: s.Tracing.Transport(nil)}
}
