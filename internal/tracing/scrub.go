package tracing

import (
	"context"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Scrub returns next behind a filter that takes out of every span, before
// it is exported, what a URL can carry besides where it points: in its
// name, its attributes, its events' and links' attributes and its status,
// every URL (any scheme: a provider's, Slack's, a database's) loses its
// credentials, query string and fragment, and the url.query attribute is
// dropped. A provider's search names the recipient in its query (Twilio's
// To=, Postmark's recipient=, Mailgun's to=), and HTTP client spans record
// the full URL.
func Scrub(next sdktrace.SpanExporter) sdktrace.SpanExporter { return scrubber{next: next} }

type scrubber struct{ next sdktrace.SpanExporter }

var _ sdktrace.SpanExporter = scrubber{}

// ExportSpans implements sdktrace.SpanExporter.
func (s scrubber) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, span := range spans {
		out[i] = scrubSpan(span)
	}
	return s.next.ExportSpans(ctx, out)
}

// Shutdown implements sdktrace.SpanExporter.
func (s scrubber) Shutdown(ctx context.Context) error { return s.next.Shutdown(ctx) }

// scrubbedSpan is a span as exported: what it holds, scrubbed.
type scrubbedSpan struct {
	sdktrace.ReadOnlySpan
	name   string
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	links  []sdktrace.Link
	status sdktrace.Status
}

func (s scrubbedSpan) Name() string                     { return s.name }
func (s scrubbedSpan) Attributes() []attribute.KeyValue { return s.attrs }
func (s scrubbedSpan) Events() []sdktrace.Event         { return s.events }
func (s scrubbedSpan) Links() []sdktrace.Link           { return s.links }
func (s scrubbedSpan) Status() sdktrace.Status          { return s.status }

func scrubSpan(span sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	out := scrubbedSpan{
		ReadOnlySpan: span,
		name:         scrubText(span.Name()),
		attrs:        scrubAttrs(span.Attributes()),
		status:       span.Status(),
	}
	out.status.Description = scrubText(out.status.Description)
	for _, e := range span.Events() {
		e.Name = scrubText(e.Name)
		e.Attributes = scrubAttrs(e.Attributes)
		out.events = append(out.events, e)
	}
	for _, l := range span.Links() {
		l.Attributes = scrubAttrs(l.Attributes)
		out.links = append(out.links, l)
	}
	return out
}

// scrubAttrs returns attrs with url.query dropped and every URL in a
// string value scrubbed.
func scrubAttrs(attrs []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		switch {
		case a.Key == "url.query":
			continue
		case a.Value.Type() == attribute.STRING:
			a.Value = attribute.StringValue(scrubText(a.Value.AsString()))
		case a.Value.Type() == attribute.STRINGSLICE:
			values := a.Value.AsStringSlice()
			for i := range values {
				values[i] = scrubText(values[i])
			}
			a.Value = attribute.StringSliceValue(values)
		}
		out = append(out, a)
	}
	return out
}

// scrubText returns s with every URL in it (a scheme, "://", and what
// follows up to white space, a quote or an angle bracket) scrubbed:
// credentials, query string and fragment removed; a placeholder for one
// that does not parse.
func scrubText(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + len("://")
		for end < len(s) && !endsURL(s[end]) {
			end++
		}
		b.WriteString(s[:start])
		b.WriteString(scrubURL(s[start:end]))
		s = s[end:]
	}
}

// scrubURL is raw without credentials, query and fragment.
func scrubURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(a URL that does not parse)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// endsURL reports whether c ends a URL in text. Anything else, ')' and ','
// included, may be in a query string, which must go whole.
func endsURL(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}
