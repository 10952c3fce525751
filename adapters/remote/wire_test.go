package remote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestTraceHeadersStayWithTheirCall: requests share their headers unless a span adds its
// trace context, so a traced call's traceparent must not reach the calls after it.
func TestTraceHeadersStayWithTheirCall(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var mu sync.Mutex
	var seen []string
	store := inmemory.New(inmemory.Options{SupportedFilters: memory.DefaultSupportedFilters()})
	inner := serve(t, store, "tok").Config.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("traceparent"))
		mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	it := memory.NewItem(json.RawMessage(`1`))
	traced, span := tp.Tracer("agent").Start(context.Background(), "step")
	for _, ctx := range []context.Context{traced, context.Background(), traced, context.Background()} {
		if _, err := rs.Store(ctx, it); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Retrieve(ctx, it.ID); err != nil {
			t.Fatal(err)
		}
	}
	span.End()
	mu.Lock()
	defer mu.Unlock()
	seen = seen[1:] // the manifest, fetched by New
	for i, s := range seen {
		method, parent, _ := strings.Cut(s, " ")
		if wantTraced := i/2%2 == 0; (parent != "") != wantTraced {
			t.Errorf("call %d (%s): traceparent %q, want one: %v", i, method, parent, wantTraced)
		}
	}
}

// TestResponseBodyBound: a response of MaxResponseBytes is read, one byte more is refused,
// whether its length is announced or it comes in chunks.
func TestResponseBodyBound(t *testing.T) {
	it := memory.NewItem(json.RawMessage(`{"text":"`+strings.Repeat("x", 5000)+`"}`), "a")
	body, err := memory.MarshalItem(it)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunked := range []bool{false, true} {
		sc := &scripted{status: http.StatusOK, contentType: "application/json", body: string(body)}
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if chunked && r.URL.Path != "/v1/manifest" {
				w.Header().Set("Content-Type", sc.contentType)
				for b := body; len(b) > 0; b = b[min(len(b), 1000):] {
					_, _ = w.Write(b[:min(len(b), 1000)])
					w.(http.Flusher).Flush()
				}
				return
			}
			sc.ServeHTTP(w, r)
		}))
		for _, limit := range []int{len(body), len(body) - 1} {
			rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL, MaxResponseBytes: int64(limit)})
			if err != nil {
				t.Fatal(err)
			}
			got, err := rs.Retrieve(context.Background(), it.ID)
			switch {
			case limit == len(body) && (err != nil || got == nil || !got.Equal(it)):
				t.Errorf("chunked %v: a body of exactly the bound: %v", chunked, err)
			case limit < len(body) && (err == nil || !strings.Contains(err.Error(), "response over")):
				t.Errorf("chunked %v: a body one byte over the bound: %v, want refused", chunked, err)
			}
			_ = rs.Close()
		}
		hs.Close()
	}
}

// mutatingTransport breaks the RoundTripper contract by writing each request's headers,
// counting the values it finds there first.
type mutatingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []int
}

func (m *mutatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, len(req.Header.Values("X-Mutated")))
	m.mu.Unlock()
	req.Header.Add("X-Mutated", "1")
	return m.base.RoundTrip(req)
}

// TestAForeignTransportGetsHeadersOfItsOwn: headers are shared between requests only through
// transports known to leave them alone; one given in Options that writes them must not see
// one request's writes in the next.
func TestAForeignTransportGetsHeadersOfItsOwn(t *testing.T) {
	store := inmemory.New(inmemory.Options{SupportedFilters: memory.DefaultSupportedFilters()})
	hs := serve(t, store, "tok")
	mt := &mutatingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL, Token: "tok", HTTPClient: &http.Client{Transport: mt}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	it := memory.NewItem(json.RawMessage(`1`))
	for range 3 {
		if _, err := rs.Store(context.Background(), it); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Retrieve(context.Background(), it.ID); err != nil {
			t.Fatal(err)
		}
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	for i, n := range mt.seen {
		if n != 0 {
			t.Fatalf("request %d arrived with %d values another request's transport wrote", i, n)
		}
	}
}
