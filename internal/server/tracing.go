package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TracerName is the instrumentation scope of the server's spans.
const TracerName = "github.com/agentmem/memory-adapter-operator/internal/server"

// Attribute keys of the server's spans (docs/operator.md, Tracing). The memory.* keys are the
// project's own; the http.* ones are OpenTelemetry's HTTP semantic conventions. No key
// carries item content, a query, an item id or a token: a trace store is read by more
// people than the memory is.
const (
	// AttrOperation is the OpenAPI operation id of a server span (storeItem, search, ...)
	// or the store method of a backend span (store, retrieve, search).
	AttrOperation = attribute.Key("memory.operation")
	// AttrBackend is the backend's name (the serve command's --backend).
	AttrBackend = attribute.Key("memory.backend")
	// AttrScope is the scope the instance serves, fixed for its life.
	AttrScope = attribute.Key("memory.scope")
	// AttrOutcome is "ok", or the contract's problem type the call ended with.
	AttrOutcome = attribute.Key("memory.outcome")
	// AttrProblemType is the problem type of an error answer; absent on success.
	AttrProblemType = attribute.Key("memory.problem_type")
	// AttrHTTPStatus is the answer's HTTP status code.
	AttrHTTPStatus = attribute.Key("http.response.status_code")
	// AttrHTTPMethod is the request's method.
	AttrHTTPMethod = attribute.Key("http.request.method")
	// AttrHTTPRoute is the matched route template (never the raw path, which holds an id).
	AttrHTTPRoute = attribute.Key("http.route")
)

// OutcomeOK is the outcome of a call that succeeded.
const OutcomeOK = "ok"

// Tracing configures the server's OpenTelemetry spans. The zero value traces nothing and
// costs nothing: the handlers and the store are not wrapped at all.
type Tracing struct {
	// Provider makes the server's tracer; nil disables tracing.
	Provider trace.TracerProvider
	// Backend is the backend's name, recorded on every span.
	Backend string
	// Scope is the instance's scope, recorded on every span.
	Scope string
}

// tracedRoutes are the data calls that get a span: the operations of the contract. Health,
// readiness and metrics scrapes are polled every few seconds and would bury them.
var tracedRoutes = map[string]bool{
	"storeItem": true, "retrieveItem": true, "search": true, "getManifest": true, "getEvidence": true,
}

// traceContext reads W3C traceparent and tracestate, whatever global propagator the process
// has set: the clients this project ships send exactly these headers.
var traceContext = propagation.TraceContext{}

func (t Tracing) tracer() trace.Tracer { return t.Provider.Tracer(TracerName) }

func (t Tracing) attrs() []attribute.KeyValue {
	return []attribute.KeyValue{AttrBackend.String(t.Backend), AttrScope.String(t.Scope)}
}

// traced gives each request of a data route a server span, child of the caller's W3C trace
// context when the request carries one. It sits inside instrument, so that it reads the
// status and problem type instrument's recorder captures, and outside requireToken, so that
// a refused token is traced too.
func (s *Server) traced(route string, next http.Handler) http.Handler {
	t := s.cfg.Tracing
	if t.Provider == nil || !tracedRoutes[route] {
		return next
	}
	tracer := t.tracer()
	base := append(t.attrs(), AttrOperation.String(route))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		attrs := append(base[:len(base):len(base)], AttrHTTPMethod.String(r.Method), AttrHTTPRoute.String(routeTemplate(r)))
		ctx, span := tracer.Start(ctx, r.Pattern, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		finished := false
		defer func() {
			status, problem := answered(w, finished)
			endServerSpan(span, status, problem)
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
		finished = true
	})
}

// routeTemplate is the path part of the matched pattern ("/v1/items/{id}").
func routeTemplate(r *http.Request) string {
	if _, path, ok := strings.Cut(r.Pattern, " "); ok {
		return path
	}
	return r.Pattern
}

// answered reads the status and problem type of the answer from instrument's recorder. A
// handler that panicked has written nothing yet: instrument answers it 502 adapter_error.
func answered(w http.ResponseWriter, finished bool) (int, string) {
	rec, ok := w.(*recorder)
	if !ok {
		return 0, ""
	}
	if !finished && rec.status == 0 {
		return http.StatusBadGateway, string(memory.ProblemAdapterError)
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	return status, rec.problemType
}

// endServerSpan records the answer. Only 5xx answers are errors of the server: a 4xx is the
// caller's, as OpenTelemetry's HTTP conventions say for server spans.
func endServerSpan(span trace.Span, status int, problem string) {
	outcome := OutcomeOK
	if problem != "" {
		outcome = problem
		span.SetAttributes(AttrProblemType.String(problem))
	}
	if status != 0 {
		span.SetAttributes(AttrHTTPStatus.Int(status))
	}
	span.SetAttributes(AttrOutcome.String(outcome))
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}

// tracedStore gives each backend call a client span, child of the request's server span.
// Manifest passes through untraced: it reads memory, not the backend.
type tracedStore struct {
	memory.ExternalStore
	tracer trace.Tracer
	attrs  []attribute.KeyValue
}

// traceStore wraps store when tracing is on.
func traceStore(store memory.ExternalStore, t Tracing) memory.ExternalStore {
	if t.Provider == nil || store == nil {
		return store
	}
	return &tracedStore{ExternalStore: store, tracer: t.tracer(), attrs: t.attrs()}
}

func (t *tracedStore) start(ctx context.Context, op string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "backend "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(t.attrs...), trace.WithAttributes(AttrOperation.String(op)))
}

// Store implements memory.Store.
func (t *tracedStore) Store(ctx context.Context, item memory.Item) (uuid.UUID, error) {
	return backendCall(ctx, t, "store", func(ctx context.Context) (uuid.UUID, error) { return t.ExternalStore.Store(ctx, item) })
}

// Retrieve implements memory.Store.
func (t *tracedStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	return backendCall(ctx, t, "retrieve", func(ctx context.Context) (*memory.Item, error) { return t.ExternalStore.Retrieve(ctx, id) })
}

// Search implements memory.Store.
func (t *tracedStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	return backendCall(ctx, t, "search", func(ctx context.Context) ([]memory.Item, error) { return t.ExternalStore.Search(ctx, q) })
}

// backendCall makes one backend call in a span. A call that panics ends its span too, as
// adapter_error, the answer instrument gives it, before the panic goes on up.
func backendCall[T any](ctx context.Context, t *tracedStore, op string, call func(context.Context) (T, error)) (res T, err error) {
	ctx, span := t.start(ctx, op)
	returned := false
	defer func() { endBackendSpan(span, err, returned) }()
	res, err = call(ctx)
	returned = true
	return res, err
}

// endBackendSpan records the call's outcome as the problem type the server answers for err.
// The error's text is not recorded: a backend's message may quote what it was given.
func endBackendSpan(span trace.Span, err error, returned bool) {
	outcome := OutcomeOK
	switch {
	case !returned:
		outcome = string(memory.ProblemAdapterError)
	case err != nil:
		outcome = string(problemTypeOf(err))
	}
	if outcome != OutcomeOK {
		span.SetAttributes(AttrProblemType.String(outcome))
		span.SetStatus(codes.Error, outcome)
	}
	span.SetAttributes(AttrOutcome.String(outcome))
	span.End()
}

// problemTypeOf maps a backend's error to the contract's problem type: backendError answers
// with it, and the backend span records it. An untyped error is a backend contract violation,
// adapter_error.
func problemTypeOf(err error) memory.ProblemType {
	var uq *memory.UnsupportedMemoryQuery
	var un *memory.MemoryAdapterUnavailable
	switch {
	case errors.As(err, &uq):
		return memory.ProblemUnsupportedQuery
	case errors.As(err, &un), errors.Is(err, memory.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return memory.ProblemUnavailable
	default:
		return memory.ProblemAdapterError
	}
}
