package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// The secrets of the tracing tests: none may appear in any span.
const (
	traceToken   = "tok-9f8e7d6c5b4a"
	traceContent = "the-private-content-31337"
	traceQuery   = "private-query-text-4242"
)

// failingStore answers every call with err, whose message quotes the item's content, as a
// careless backend's might.
type failingStore struct {
	memory.ExternalStore
	err   error
	panic bool
}

func (f *failingStore) Store(context.Context, memory.Item) (uuid.UUID, error) {
	if f.panic {
		panic("backend exploded on " + traceContent)
	}
	return uuid.Nil, f.err
}

func (f *failingStore) Retrieve(context.Context, uuid.UUID) (*memory.Item, error) {
	return nil, f.err
}

func (f *failingStore) Search(context.Context, memory.Query) ([]memory.Item, error) {
	return nil, f.err
}

type tracingFixture struct {
	t     *testing.T
	spans *tracetest.SpanRecorder
	url   string
}

// newTracingFixture serves backend (nil: the reference store) with tracing into a span
// recorder, unless off.
func newTracingFixture(t *testing.T, backend memory.ExternalStore, off bool) *tracingFixture {
	t.Helper()
	if backend == nil {
		backend = inmemory.New(inmemory.Options{SupportedFilters: []string{"branch_id", "source"}})
	}
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg := server.Config{Store: backend, Token: []byte(traceToken)}
	if !off {
		cfg.Tracing = server.Tracing{Provider: tp, Backend: "inmemory", Scope: "team-a"}
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	s.Refresh(context.Background(), true)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &tracingFixture{t: t, spans: sr, url: hs.URL}
}

// call sends one request with the token and the extra headers, and returns the status.
func (f *tracingFixture) call(method, path, body string, hdr map[string]string) int {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+traceToken)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func secretItem(t *testing.T) (memory.Item, string) {
	t.Helper()
	it := memory.NewItem(json.RawMessage(`{"note":"`+traceContent+`"}`), "tag-"+traceContent)
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	return it, string(b)
}

func TestTracingSpanPerCall(t *testing.T) {
	it, itemBody := secretItem(t)
	searchBody := `{"text":"` + traceQuery + `","tags":null,"filters":null,"limit":5}`
	unavailable := memory.NewUnavailable("backend down while writing "+traceContent, nil)
	cases := map[string]struct {
		// backend serves the call; nil is the reference store with it stored.
		backend memory.ExternalStore
		// method, path and body are the request.
		method, path, body string
		// noToken sends no Authorization header.
		noToken bool
		// status, operation and outcome are what the server span must say.
		status    int
		operation string
		outcome   string
		// backendOp is the backend span's operation, "" when the call must reach no backend.
		backendOp string
		// backendOutcome is the backend span's outcome.
		backendOutcome string
	}{
		"store": {method: "POST", path: "/v1/items", body: itemBody, status: 201,
			operation: "storeItem", outcome: "ok", backendOp: "store", backendOutcome: "ok"},
		"retrieve": {method: "GET", path: "/v1/items/" + it.ID.String(), status: 200,
			operation: "retrieveItem", outcome: "ok", backendOp: "retrieve", backendOutcome: "ok"},
		"retrieve a missing item": {method: "GET", path: "/v1/items/" + uuid.NewString(), status: 404,
			operation: "retrieveItem", outcome: "not_found", backendOp: "retrieve", backendOutcome: "ok"},
		"search": {method: "POST", path: "/v1/search", body: searchBody, status: 200,
			operation: "search", outcome: "ok", backendOp: "search", backendOutcome: "ok"},
		"manifest": {method: "GET", path: "/v1/manifest", status: 200, operation: "getManifest", outcome: "ok"},
		"evidence": {method: "GET", path: "/v1/evidence", status: 200, operation: "getEvidence", outcome: "ok"},
		"a malformed item": {method: "POST", path: "/v1/items", body: `{"content":`, status: 400,
			operation: "storeItem", outcome: "invalid_request"},
		"no token": {method: "POST", path: "/v1/items", body: itemBody, noToken: true, status: 401,
			operation: "storeItem", outcome: "unauthorized"},
		"an unavailable backend": {backend: &failingStore{err: unavailable}, method: "POST", path: "/v1/items", body: itemBody,
			status: 503, operation: "storeItem", outcome: "unavailable", backendOp: "store", backendOutcome: "unavailable"},
		"a backend that breaks the contract": {backend: &failingStore{err: errors.New("bad row " + traceQuery)}, method: "POST",
			path: "/v1/search", body: searchBody, status: 502, operation: "search", outcome: "adapter_error", backendOp: "search", backendOutcome: "adapter_error"},
		"a backend that refuses the query": {backend: &failingStore{err: memory.NewUnsupportedQuery("source")}, method: "POST",
			path: "/v1/search", body: searchBody, status: 422, operation: "search", outcome: "unsupported_query", backendOp: "search", backendOutcome: "unsupported_query"},
		"a backend that panics": {backend: &failingStore{panic: true}, method: "POST", path: "/v1/items", body: itemBody,
			status: 502, operation: "storeItem", outcome: "adapter_error", backendOp: "store", backendOutcome: "adapter_error"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			backend := tc.backend
			if backend == nil {
				ref := inmemory.New(inmemory.Options{SupportedFilters: []string{"branch_id", "source"}})
				if _, err := ref.Store(context.Background(), it); err != nil {
					t.Fatal(err)
				}
				backend = ref
			} else if fs, ok := backend.(*failingStore); ok {
				fs.ExternalStore = inmemory.New(inmemory.Options{SupportedFilters: []string{"branch_id", "source"}})
			}
			f := newTracingFixture(t, backend, false)
			hdr := map[string]string{}
			if tc.noToken {
				hdr["Authorization"] = "Bearer wrong"
			}
			if got := f.call(tc.method, tc.path, tc.body, hdr); got != tc.status {
				t.Fatalf("status %d, want %d", got, tc.status)
			}
			srv, backendSpan := splitSpans(t, f.spans.Ended())
			a := attrs(srv)
			want := map[attribute.Key]attribute.Value{
				server.AttrOperation:  attribute.StringValue(tc.operation),
				server.AttrBackend:    attribute.StringValue("inmemory"),
				server.AttrScope:      attribute.StringValue("team-a"),
				server.AttrOutcome:    attribute.StringValue(tc.outcome),
				server.AttrHTTPStatus: attribute.IntValue(tc.status),
				server.AttrHTTPMethod: attribute.StringValue(tc.method),
			}
			if tc.outcome != "ok" {
				want[server.AttrProblemType] = attribute.StringValue(tc.outcome)
			} else if _, ok := a[server.AttrProblemType]; ok {
				t.Errorf("a successful call has a problem type: %v", a[server.AttrProblemType].String())
			}
			for k, v := range want {
				if a[k] != v {
					t.Errorf("server span %s = %q, want %q", k, a[k].String(), v.String())
				}
			}
			if srv.SpanKind() != trace.SpanKindServer {
				t.Errorf("server span kind %v", srv.SpanKind())
			}
			wantCode := codes.Unset
			if tc.status >= 500 {
				wantCode = codes.Error
			}
			if srv.Status().Code != wantCode {
				t.Errorf("server span status %v, want %v", srv.Status().Code, wantCode)
			}
			checkBackendSpan(t, srv, backendSpan, tc.backendOp, tc.backendOutcome)
		})
	}
}

// splitSpans returns the one server span and the backend span (nil when there is none), and
// fails on anything else.
func splitSpans(t *testing.T, spans []sdktrace.ReadOnlySpan) (sdktrace.ReadOnlySpan, sdktrace.ReadOnlySpan) {
	t.Helper()
	var srv, backend sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch {
		case s.SpanKind() == trace.SpanKindServer && srv == nil:
			srv = s
		case s.SpanKind() == trace.SpanKindClient && backend == nil:
			backend = s
		default:
			t.Fatalf("unexpected span %q (%v)", s.Name(), s.SpanKind())
		}
	}
	if srv == nil {
		t.Fatalf("no server span among %d spans", len(spans))
	}
	return srv, backend
}

func checkBackendSpan(t *testing.T, srv, b sdktrace.ReadOnlySpan, op, outcome string) {
	t.Helper()
	if op == "" {
		if b != nil {
			t.Fatalf("a call that reaches no backend has backend span %q", b.Name())
		}
		return
	}
	if b == nil {
		t.Fatal("no backend span")
	}
	if b.Parent().SpanID() != srv.SpanContext().SpanID() || b.SpanContext().TraceID() != srv.SpanContext().TraceID() {
		t.Errorf("backend span's parent %v is not the server span %v", b.Parent().SpanID(), srv.SpanContext().SpanID())
	}
	a := attrs(b)
	if a[server.AttrOperation].AsString() != op || a[server.AttrOutcome].AsString() != outcome || a[server.AttrBackend].AsString() != "inmemory" {
		t.Errorf("backend span attributes %v, want operation %s outcome %s", b.Attributes(), op, outcome)
	}
	if (outcome == "ok") != (b.Status().Code != codes.Error) {
		t.Errorf("backend span status %v for outcome %s", b.Status(), outcome)
	}
}

func TestTracingRecordsNoContentIdOrToken(t *testing.T) {
	it, itemBody := secretItem(t)
	for _, backend := range []memory.ExternalStore{
		nil,
		&failingStore{ExternalStore: inmemory.New(inmemory.Options{}), err: memory.NewUnavailable("down at "+traceContent+" "+traceQuery, nil)},
	} {
		f := newTracingFixture(t, backend, false)
		f.call("POST", "/v1/items", itemBody, nil)
		f.call("GET", "/v1/items/"+it.ID.String(), "", nil)
		f.call("POST", "/v1/search", `{"text":"`+traceQuery+`","tags":["tag-`+traceContent+`"],"filters":null,"limit":5}`, nil)
		spans := f.spans.Ended()
		if len(spans) < 6 {
			t.Fatalf("%d spans, want a server and a backend span per call", len(spans))
		}
		for _, s := range spans {
			texts := []string{s.Name(), s.Status().Description}
			for _, kv := range s.Attributes() {
				texts = append(texts, kv.Value.String())
			}
			for _, e := range s.Events() {
				texts = append(texts, e.Name)
				for _, kv := range e.Attributes {
					texts = append(texts, kv.Value.String())
				}
			}
			for _, text := range texts {
				for _, secret := range []string{traceContent, traceQuery, traceToken, it.ID.String()} {
					if strings.Contains(text, secret) {
						t.Errorf("span %q records %q", s.Name(), text)
					}
				}
			}
		}
	}
}

func TestTracingContinuesTheCallersTrace(t *testing.T) {
	f := newTracingFixture(t, nil, false)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	f.call("GET", "/v1/manifest", "", map[string]string{"traceparent": "00-" + traceID + "-" + parentID + "-01", "tracestate": "vendor=x"})
	spans := f.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if got := s.SpanContext().TraceID().String(); got != traceID {
		t.Errorf("trace id %s, want the caller's %s", got, traceID)
	}
	if got := s.Parent().SpanID().String(); got != parentID || !s.Parent().IsRemote() {
		t.Errorf("parent %s (remote %v), want the caller's span %s", got, s.Parent().IsRemote(), parentID)
	}
	if got := s.SpanContext().TraceState().Get("vendor"); got != "x" {
		t.Errorf("tracestate vendor=%q, want the caller's x", got)
	}
}

func TestTracingOffRecordsNothing(t *testing.T) {
	// The process's global provider records too: a server without Tracing must not use it.
	global := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(global)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	_, itemBody := secretItem(t)
	for _, backend := range []memory.ExternalStore{nil, &failingStore{ExternalStore: inmemory.New(inmemory.Options{}), panic: true}} {
		f := newTracingFixture(t, backend, true)
		if got := f.call("POST", "/v1/items", itemBody, map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}); got != 201 && got != 502 {
			t.Fatalf("store: %d", got)
		}
		f.call("GET", "/v1/manifest", "", nil)
		if n := len(f.spans.Ended()) + len(global.Ended()); n != 0 {
			t.Errorf("tracing off recorded %d spans", n)
		}
	}
}

func TestTracingSkipsProbesAndScrapes(t *testing.T) {
	f := newTracingFixture(t, nil, false)
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/nowhere"} {
		f.call("GET", p, "", nil)
	}
	if n := len(f.spans.Ended()); n != 0 {
		t.Errorf("%d spans for health, readiness, metrics and unknown routes, want none", n)
	}
}
