package remote

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// traceContext writes W3C traceparent and tracestate whatever global propagator the process
// has set (none, by default): the adapter server reads exactly these headers, so an agent
// that traces its own work sees the adapter's spans in the same trace without configuring
// anything.
var traceContext = propagation.TraceContext{}

// injectTraceContext adds the W3C trace context of the span in ctx to h. Without a span, or
// with one that is not valid (no tracing in the caller), it adds nothing and costs a lookup.
func injectTraceContext(ctx context.Context, h http.Header) {
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
}
