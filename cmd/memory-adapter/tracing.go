package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// defaultServiceName is service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// say otherwise; the operator sets OTEL_SERVICE_NAME to the MemoryAdapter's name.
const defaultServiceName = "memory-adapter"

// tracingShutdownTimeout bounds the flush of the last spans at exit, which must fit in what is
// left of the pod's grace period after the server's own shutdown.
const tracingShutdownTimeout = 5 * time.Second

// tracingEnabled decides from the standard OpenTelemetry variables whether serve exports
// traces. Tracing is opt-in: OTEL_SDK_DISABLED=true turns it off; otherwise
// OTEL_TRACES_EXPORTER decides when set ("otlp" on, "none" off, anything else refused, as
// only OTLP is built in); unset, an OTLP endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT) turns it on. The specification's default exporter is otlp
// to localhost, but an adapter pod has no collector beside it, so an endpoint is the sign
// that someone set one up.
func tracingEnabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	if p := protocol(getenv); p != "" && p != "http/protobuf" {
		return false, usageError("OTEL_EXPORTER_OTLP_PROTOCOL %q: the adapter exports OTLP over HTTP only (http/protobuf)", p)
	}
	exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exporters == "" {
		return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "", nil
	}
	on := false
	for e := range strings.SplitSeq(exporters, ",") {
		switch strings.TrimSpace(e) {
		case "otlp":
			on = true
		case "none":
		default:
			return false, usageError("OTEL_TRACES_EXPORTER %q: the adapter supports otlp and none", exporters)
		}
	}
	return on, nil
}

// protocol is the OTLP protocol asked for traces, the signal's own variable first.
func protocol(getenv func(string) string) string {
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p != "" {
		return p
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
}

// startTracing returns the server's tracing configuration: without tracing (see
// tracingEnabled) a zero Provider, which wraps nothing; with it, an SDK provider whose
// OTLP/HTTP exporter, sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), batching
// (OTEL_BSP_*) and resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) come from the
// standard variables, read by the SDK itself. Stop it with stopTracing.
func startTracing(ctx context.Context, log *slog.Logger, b *backendConfig) (server.Tracing, error) {
	t := server.Tracing{Backend: b.Backend, Scope: b.config().ScopeOrDefault()}
	on, err := tracingEnabled(os.Getenv)
	if err != nil || !on {
		return t, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return t, usageError("OTEL_EXPORTER_OTLP_*: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", defaultServiceName),
			attribute.String("service.version", adapterVersion()),
		),
		resource.WithTelemetrySDK(),
		// Last, so that the user's OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
		resource.WithFromEnv(),
	)
	if err != nil {
		return t, usageError("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// Export failures (a collector down) are the SDK's to retry; they are logged in the
	// server's JSON shape rather than with the standard logger's plain lines.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("Exporting traces failed", "error", err)
	}))
	t.Provider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	log.Info("Tracing", "exporter", "otlp", "protocol", "http/protobuf")
	return t, nil
}

// stopTracing flushes the spans still buffered and stops the exporter; a provider that is
// not the SDK's (no tracing) has nothing to flush.
func stopTracing(p trace.TracerProvider, log *slog.Logger) {
	tp, ok := p.(*sdktrace.TracerProvider)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		log.Warn("Flushing traces failed", "error", fmt.Errorf("tracer provider shutdown: %w", err))
	}
}
