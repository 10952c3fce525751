package remote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// TestTraceContextReachesTheServer calls a real traced server through the client inside a
// span of the caller's: every server span must be that span's child, in its trace.
func TestTraceContextReachesTheServer(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	srv, err := server.New(server.Config{
		Store:   inmemory.New(inmemory.Options{SupportedFilters: memory.DefaultSupportedFilters()}),
		Tracing: server.Tracing{Provider: tp, Backend: "inmemory", Scope: "default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })

	ctx, agent := tp.Tracer("agent").Start(context.Background(), "agent step")
	it := memory.NewItem(json.RawMessage(`"hello"`))
	if _, err := rs.Store(ctx, it); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Retrieve(ctx, it.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Search(ctx, memory.Query{Limit: 3}); err != nil {
		t.Fatal(err)
	}
	agent.End()

	want := agent.SpanContext()
	servers := 0
	for _, s := range sr.Ended() {
		if s.SpanKind() != trace.SpanKindServer {
			continue
		}
		if s.Name() == "GET /v1/manifest" {
			// remote.New fetched the manifest outside the agent's span: a trace of its own.
			if s.Parent().IsValid() {
				t.Errorf("the manifest fetch at New has parent %v, want none", s.Parent().SpanID())
			}
			continue
		}
		servers++
		if s.SpanContext().TraceID() != want.TraceID() || s.Parent().SpanID() != want.SpanID() || !s.Parent().IsRemote() {
			t.Errorf("server span %q: trace %v parent %v, want the agent's span %v in trace %v",
				s.Name(), s.SpanContext().TraceID(), s.Parent().SpanID(), want.SpanID(), want.TraceID())
		}
	}
	if servers != 3 {
		t.Errorf("%d server spans for the three calls, want 3", servers)
	}
}

// TestNoSpanSendsNoTraceHeaders: a caller that does not trace sends no trace headers, so the
// server starts no trace on the client's behalf it did not ask for.
func TestNoSpanSendsNoTraceHeaders(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	inner := server.Config{Store: inmemory.New(inmemory.Options{SupportedFilters: memory.DefaultSupportedFilters()})}
	srv, err := server.New(inner)
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Values("traceparent")...)
		seen = append(seen, r.Header.Values("tracestate")...)
		mu.Unlock()
		srv.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	if _, err := rs.Store(context.Background(), memory.NewItem(json.RawMessage(`1`))); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("a call without a span sent trace headers %q", seen)
	}
}
