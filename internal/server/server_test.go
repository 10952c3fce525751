package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/openapitest"
)

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, _, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/manifest", "/v1/items", "/v1/items/{id}", "/v1/search", "/v1/evidence", "/healthz", "/readyz", "/metrics"} {
		if doc.Paths.Find(p) == nil {
			t.Errorf("path %s missing from the document", p)
		}
	}
	enum := doc.Components.Schemas["Problem"].Value.Properties["type"].Value.Enum
	for _, typ := range []memory.ProblemType{
		memory.ProblemInvalidRequest, memory.ProblemUnauthorized, memory.ProblemNotFound,
		memory.ProblemMethodNotAllowed, memory.ProblemPayloadTooLarge, memory.ProblemUnsupportedQuery,
		memory.ProblemAdapterError, memory.ProblemUnavailable,
	} {
		if !slices.Contains(enum, any(string(typ))) {
			t.Errorf("problem type %q missing from the document's enum", typ)
		}
	}
}

func TestRoundTripThroughTheWire(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: "s3cret"})
	r := f.do("GET", "/v1/manifest", "", false, nil)
	if r.status != 200 {
		t.Fatalf("manifest: %d %s", r.status, r.body)
	}
	var m memory.Manifest
	if err := json.Unmarshal(r.body, &m); err != nil || !m.Equal(f.store.Manifest()) {
		t.Fatalf("manifest %s does not equal the store's (%v)", r.body, err)
	}

	it := memory.NewItem(json.RawMessage(`{"n": 12345678901234567890123, "s": "Hello"}`), "b", "a", "b")
	it.Metadata["branch_id"] = json.RawMessage(`"br-1"`)
	it.Metadata["nested"] = json.RawMessage(`{"x": [1, 2.50, null]}`)
	r = f.do("POST", "/v1/items", itemJSON(t, it), false, nil)
	if r.status != 201 || string(r.body) != `{"id":"`+it.ID.String()+`"}` {
		t.Fatalf("store: %d %s", r.status, r.body)
	}

	r = f.do("GET", "/v1/items/"+it.ID.String(), "", false, nil)
	if r.status != 200 {
		t.Fatalf("retrieve: %d %s", r.status, r.body)
	}
	var got memory.Item
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(it) {
		t.Fatalf("retrieved %s, differs in %v", r.body, got.Diff(it))
	}

	r = f.do("POST", "/v1/search", `{"text":"hello","filters":{"branch_id":"br-1"}}`, false, nil)
	if r.status != 200 {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	var res struct{ Items []memory.Item }
	if err := json.Unmarshal(r.body, &res); err != nil || len(res.Items) != 1 || !res.Items[0].Equal(it) {
		t.Fatalf("search result %s (%v)", r.body, err)
	}

	r = f.do("GET", "/v1/items/"+uuid.NewString(), "", false, nil)
	if r.status != 404 || r.problem.Type != memory.ProblemNotFound {
		t.Fatalf("unknown id: %d %s", r.status, r.body)
	}

	r = f.do("GET", "/v1/evidence", "", false, nil)
	var ev memory.EvidenceReport
	if err := json.Unmarshal(r.body, &ev); err != nil || !ev.ManifestValid || ev.ManifestHash != f.store.Manifest().Hash() || ev.AdapterVersion != "test-1" {
		t.Fatalf("evidence %s (%v)", r.body, err)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := f.do("GET", p, "", false, map[string]string{"Authorization": ""}); r.status != 200 {
			t.Fatalf("%s without a token: %d", p, r.status)
		}
	}
	r = f.do("GET", "/metrics", "", false, map[string]string{"Authorization": ""})
	if r.status != 200 || !strings.Contains(string(r.body), `memory_adapter_requests_total{code="201",method="POST",route="storeItem"} 1`) {
		t.Fatalf("metrics: %d\n%s", r.status, r.body)
	}
}

// TestHostileInput sends every kind of bad request; each must get its documented status and
// problem type (the validating transport also checks the answer against the document), and
// none may reach the backend.
func TestHostileInput(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: "tok", maxBody: 4096})
	id := uuid.NewString()
	valid := fmt.Sprintf(`{"id":%q,"created_at":1700000000.5}`, id)
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		typ                      memory.ProblemType
	}{
		{"malformed item JSON", "POST", "/v1/items", `{"id":`, nil, 400, memory.ProblemInvalidRequest},
		{"item is an array", "POST", "/v1/items", `[1]`, nil, 400, memory.ProblemInvalidRequest},
		{"item is null", "POST", "/v1/items", `null`, nil, 400, memory.ProblemInvalidRequest},
		{"empty body", "POST", "/v1/items", ``, map[string]string{"Content-Type": "application/json"}, 400, memory.ProblemInvalidRequest},
		{"content nested over the limit", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":1,"content":%s}`, id, nested(memory.MaxJSONDepth+1)), nil, 400, memory.ProblemInvalidRequest},
		{"content nested 1000 deep", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":1,"content":%s}`, id, nested(1000)), nil, 400, memory.ProblemInvalidRequest},
		{"metadata nested over the limit", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":1,"metadata":{"k":%s}}`, id, nested(memory.MaxJSONDepth)), nil, 400, memory.ProblemInvalidRequest},
		{"filter value nested over the limit", "POST", "/v1/search", `{"filters":{"branch_id":` + nested(memory.MaxJSONDepth) + `}}`, nil, 400, memory.ProblemInvalidRequest},
		{"invalid UTF-8 in a string", "POST", "/v1/items", fmt.Sprintf("{\"id\":%q,\"created_at\":1,\"content\":\"\xff\"}", id), nil, 400, memory.ProblemInvalidRequest},
		{"text/plain item", "POST", "/v1/items", valid, map[string]string{"Content-Type": "text/plain"}, 415, memory.ProblemUnsupportedMediaType},
		{"form-encoded item", "POST", "/v1/items", valid, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, memory.ProblemUnsupportedMediaType},
		{"item without a content type", "POST", "/v1/items", valid, map[string]string{"Content-Type": ""}, 415, memory.ProblemUnsupportedMediaType},
		{"multipart search", "POST", "/v1/search", `{}`, map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, memory.ProblemUnsupportedMediaType},
		{"json-like media type", "POST", "/v1/search", `{}`, map[string]string{"Content-Type": "application/jsonx"}, 415, memory.ProblemUnsupportedMediaType},
		{"trailing data", "POST", "/v1/items", valid + `{}`, nil, 400, memory.ProblemInvalidRequest},
		{"wrong type tags", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":1,"tags":"a"}`, id), nil, 400, memory.ProblemInvalidRequest},
		{"wrong type created_at", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":"now"}`, id), nil, 400, memory.ProblemInvalidRequest},
		{"quoted number created_at", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":"1700000000"}`, id), nil, 400, memory.ProblemInvalidRequest},
		{"quoted number limit", "POST", "/v1/search", `{"limit":"5"}`, nil, 400, memory.ProblemInvalidRequest},
		{"unknown item field", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":1,"score":0.9}`, id), nil, 400, memory.ProblemInvalidRequest},
		{"missing id", "POST", "/v1/items", `{"created_at":1}`, nil, 400, memory.ProblemInvalidRequest},
		{"invalid UUID in item", "POST", "/v1/items", `{"id":"not-a-uuid","created_at":1}`, nil, 400, memory.ProblemInvalidRequest},
		{"braced UUID in item", "POST", "/v1/items", `{"id":"{` + id + `}","created_at":1}`, nil, 400, memory.ProblemInvalidRequest},
		{"huge exponent timestamp", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":1e999999}`, id), nil, 400, memory.ProblemInvalidRequest},
		{"body over the limit", "POST", "/v1/items", fmt.Sprintf(`{"id":%q,"created_at":1,"content":%q}`, id, strings.Repeat("x", 5000)), nil, 413, memory.ProblemPayloadTooLarge},
		{"invalid UUID in path", "GET", "/v1/items/xyz", "", nil, 400, memory.ProblemInvalidRequest},
		{"urn UUID in path", "GET", "/v1/items/urn:uuid:" + id, "", nil, 400, memory.ProblemInvalidRequest},
		{"malformed query JSON", "POST", "/v1/search", `{"limit":}`, nil, 400, memory.ProblemInvalidRequest},
		{"unknown query field", "POST", "/v1/search", `{"offset":3}`, nil, 400, memory.ProblemInvalidRequest},
		{"wrong type limit", "POST", "/v1/search", `{"limit":true}`, nil, 400, memory.ProblemInvalidRequest},
		{"fractional limit", "POST", "/v1/search", `{"limit":2.5}`, nil, 400, memory.ProblemInvalidRequest},
		{"huge limit", "POST", "/v1/search", `{"limit":100000000000000000000}`, nil, 400, memory.ProblemInvalidRequest},
		{"limit above the wire bound", "POST", "/v1/search", `{"limit":1000001}`, nil, 400, memory.ProblemInvalidRequest},
		{"wrong type filters", "POST", "/v1/search", `{"filters":["a"]}`, nil, 400, memory.ProblemInvalidRequest},
		{"negative limit", "POST", "/v1/search", `{"limit":-1}`, nil, 422, memory.ProblemUnsupportedQuery},
		{"query over the limit", "POST", "/v1/search", `{"text":"` + strings.Repeat("y", 5000) + `"}`, nil, 413, memory.ProblemPayloadTooLarge},
		{"missing token", "POST", "/v1/items", valid, map[string]string{"Authorization": ""}, 401, memory.ProblemUnauthorized},
		{"wrong token", "POST", "/v1/items", valid, map[string]string{"Authorization": "Bearer tok2"}, 401, memory.ProblemUnauthorized},
		{"token prefix", "GET", "/v1/manifest", "", map[string]string{"Authorization": "Bearer to"}, 401, memory.ProblemUnauthorized},
		{"basic scheme", "GET", "/v1/evidence", "", map[string]string{"Authorization": "Basic dG9r"}, 401, memory.ProblemUnauthorized},
		{"unknown route", "GET", "/v2/items", "", nil, 404, memory.ProblemNotFound},
		{"wrong method", "DELETE", "/v1/items/" + id, "", nil, 405, memory.ProblemMethodNotAllowed},
		{"wrong method on search", "GET", "/v1/search", "", nil, 405, memory.ProblemMethodNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.store.total()
			r := f.do(tc.method, tc.path, tc.body, true, tc.hdr)
			if r.status != tc.status || r.problem.Type != tc.typ {
				t.Fatalf("got %d %q (%s), want %d %q", r.status, r.problem.Type, r.body, tc.status, tc.typ)
			}
			if r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("content type %q", r.header.Get("Content-Type"))
			}
			if got := f.store.total(); got != before {
				t.Fatalf("a rejected request reached the backend (%d calls)", got-before)
			}
		})
	}
	r := f.do("POST", "/v1/items", valid, false, map[string]string{"Authorization": "bearer tok"})
	if r.status != 201 {
		t.Fatalf("a case-insensitive scheme with the right token: %d %s", r.status, r.body)
	}
	r = f.do("POST", "/v1/search", `{}`, false, map[string]string{"Content-Type": "Application/JSON; charset=utf-8"})
	if r.status != 200 {
		t.Fatalf("application/json with a charset parameter: %d %s", r.status, r.body)
	}
}

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestNestingLimitOnTheWire pins the limit at the wire: exactly at the limit is stored and
// reads back, one level more is 400 with the message every backend uses, and the backend is
// never called for it.
func TestNestingLimitOnTheWire(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, tc := range []struct {
		name   string
		item   func(it *memory.Item)
		detail string // "" means stored
	}{
		{"content at the limit", func(it *memory.Item) { it.Content = json.RawMessage(nested(memory.MaxJSONDepth)) }, ""},
		{"metadata at the limit", func(it *memory.Item) { it.Metadata["k"] = json.RawMessage(nested(memory.MaxJSONDepth - 1)) }, ""},
		{"content one over", func(it *memory.Item) { it.Content = json.RawMessage(nested(memory.MaxJSONDepth + 1)) }, memory.TooDeepMessage("content")},
		{"metadata one over", func(it *memory.Item) { it.Metadata["k"] = json.RawMessage(nested(memory.MaxJSONDepth)) }, memory.TooDeepMessage("metadata")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := memory.NewItem(nil)
			tc.item(&it)
			before := f.store.total()
			r := f.do("POST", "/v1/items", itemJSON(t, it), true, nil)
			if tc.detail == "" {
				if r.status != 201 {
					t.Fatalf("store at the limit: %d %s", r.status, r.body)
				}
				if g := f.do("GET", "/v1/items/"+it.ID.String(), "", false, nil); g.status != 200 {
					t.Fatalf("retrieve at the limit: %d %s", g.status, g.body)
				}
				return
			}
			if r.status != 400 || r.problem.Type != memory.ProblemInvalidRequest || r.problem.Detail != tc.detail {
				t.Fatalf("got %d %q %q, want 400 invalid_request %q", r.status, r.problem.Type, r.problem.Detail, tc.detail)
			}
			if f.store.total() != before {
				t.Fatal("the backend was called for a value over the nesting limit")
			}
		})
	}
	// The documented page bound (limit + 3, 35 levels) that keeps every page readable by .NET's
	// default parser (64) and the rest: content and metadata are both stored at the limit.
	page := f.do("POST", "/v1/search", `{"limit":100}`, false, nil)
	if page.status != 200 || memory.JSONDepth(page.body) != memory.MaxJSONDepth+3 {
		t.Fatalf("search page: %d, depth %d, want 200 and depth %d", page.status, memory.JSONDepth(page.body), memory.MaxJSONDepth+3)
	}
}

func TestUnsupportedFilterNeverReachesTheBackend(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	r := f.do("POST", "/v1/search", `{"filters":{"zeta":1,"branch_id":"x","alpha":2,"source":"s"},"limit":-5}`, false, nil)
	if r.status != 422 || r.problem.Type != memory.ProblemUnsupportedQuery {
		t.Fatalf("got %d %s", r.status, r.body)
	}
	if want := []string{"alpha", "limit", "zeta"}; !slices.Equal(r.problem.RejectedKeys, want) {
		t.Fatalf("rejected_keys %q, want %q", r.problem.RejectedKeys, want)
	}
	if n := f.store.searches.Load(); n != 0 {
		t.Fatalf("the backend received %d searches", n)
	}
	if n := f.backendCalls("search"); n != 0 {
		t.Fatalf("metrics count %v backend searches", n)
	}
	// limit 0 answers [] without the backend too.
	r = f.do("POST", "/v1/search", `{"limit":0}`, false, nil)
	if r.status != 200 || string(r.body) != `{"items":[]}` || f.store.searches.Load() != 0 {
		t.Fatalf("limit 0: %d %s, %d backend searches", r.status, r.body, f.store.searches.Load())
	}
	// A supported query does reach it, which is what makes the zero counts above meaningful.
	r = f.do("POST", "/v1/search", `{"filters":{"branch_id":"x"}}`, false, nil)
	if r.status != 200 || f.store.searches.Load() != 1 || f.backendCalls("search") != 1 {
		t.Fatalf("supported query: %d %s, %d backend searches", r.status, r.body, f.store.searches.Load())
	}
}

func TestEvidenceInvalidatesTheManifest(t *testing.T) {
	p := &fakeProber{}
	p.set(memory.Evidence{ServiceVersion: "15.8", Probes: []memory.ProbeResult{{Name: "jsonb", OK: true}}}, nil)
	f := newFixture(t, fixtureOpts{prober: p})
	it := memory.NewItem(json.RawMessage(`"x"`))
	if r := f.do("POST", "/v1/items", itemJSON(t, it), false, nil); r.status != 201 {
		t.Fatalf("store while valid: %d %s", r.status, r.body)
	}

	// A failing capability probe makes data calls unavailable until it passes again.
	p.set(memory.Evidence{ServiceVersion: "15.8", Probes: []memory.ProbeResult{{Name: "jsonb", OK: false, Detail: "gone"}}}, nil)
	f.srv.Refresh(context.Background(), true)
	before := f.store.total()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/items", itemJSON(t, it)},
		{"GET", "/v1/items/" + it.ID.String(), ""},
		{"POST", "/v1/search", `{}`},
	} {
		if r := f.do(c.method, c.path, c.body, false, nil); r.status != 503 || r.problem.Type != memory.ProblemUnavailable || !strings.Contains(r.problem.Detail, "jsonb") {
			t.Fatalf("%s %s with a failed probe: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	if f.store.total() != before {
		t.Fatal("an invalidated server called its backend")
	}
	if r := f.do("GET", "/readyz", "", false, nil); r.status != 503 {
		t.Fatalf("readyz with a failed probe: %d", r.status)
	}
	p.set(memory.Evidence{ServiceVersion: "15.8", Probes: []memory.ProbeResult{{Name: "jsonb", OK: true}}}, nil)
	f.srv.Refresh(context.Background(), true)
	if r := f.do("GET", "/v1/items/"+it.ID.String(), "", false, nil); r.status != 200 {
		t.Fatalf("after the probe recovered: %d %s", r.status, r.body)
	}

	// A changed service version is sticky: the published manifest was for 15.8.
	p.set(memory.Evidence{ServiceVersion: "16.1"}, nil)
	f.srv.Refresh(context.Background(), true)
	p.set(memory.Evidence{ServiceVersion: "15.8"}, nil)
	f.srv.Refresh(context.Background(), true)
	r := f.do("GET", "/v1/items/"+it.ID.String(), "", false, nil)
	if r.status != 503 || !strings.Contains(r.problem.Detail, `"16.1"`) {
		t.Fatalf("after a version change: %d %s", r.status, r.body)
	}
	var ev memory.EvidenceReport
	if err := json.Unmarshal(f.do("GET", "/v1/evidence", "", false, nil).body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ManifestValid || ev.InitialServiceVersion != "15.8" || !strings.Contains(ev.Reason, "service version changed") {
		t.Fatalf("evidence after a version change: %+v", ev)
	}
	// The manifest itself is still served unchanged.
	if r := f.do("GET", "/v1/manifest", "", false, nil); r.status != 200 {
		t.Fatalf("manifest while invalid: %d", r.status)
	}
}

func TestImmediateIndexLagAndUnreachableBackend(t *testing.T) {
	lag := int64(3)
	p := &fakeProber{}
	p.set(memory.Evidence{ServiceVersion: "1", IndexLag: &lag}, nil)
	f := newFixture(t, fixtureOpts{prober: p})
	if f.srv.Valid() {
		t.Fatal("an immediate manifest with index lag 3 is still valid")
	}
	zero := int64(0)
	p.set(memory.Evidence{ServiceVersion: "1", IndexLag: &zero}, nil)
	f.srv.Refresh(context.Background(), true)
	if !f.srv.Valid() {
		t.Fatal("index lag 0 did not restore validity")
	}
	p.set(memory.Evidence{}, memory.NewUnavailable("dial", errors.New("connection refused")))
	f.srv.Refresh(context.Background(), true)
	r := f.do("POST", "/v1/search", `{}`, false, nil)
	if r.status != 503 || !strings.Contains(r.problem.Detail, "unreachable") {
		t.Fatalf("unreachable backend: %d %s", r.status, r.body)
	}
}

// errStore returns a fixed error or panics, to check the error mapping.
type errStore struct {
	memory.ExternalStore
	err   error
	panic bool
}

func (e *errStore) Retrieve(context.Context, uuid.UUID) (*memory.Item, error) {
	if e.panic {
		panic("backend bug")
	}
	return nil, e.err
}

func TestBackendErrorMapping(t *testing.T) {
	cases := []struct {
		name   string
		store  *errStore
		status int
		typ    memory.ProblemType
	}{
		{"unavailable", &errStore{err: memory.NewUnavailable("down", nil)}, 503, memory.ProblemUnavailable},
		{"adapter error", &errStore{err: memory.NewAdapterError("bad row", errors.New("scan"))}, 502, memory.ProblemAdapterError},
		{"untyped error", &errStore{err: errors.New("raw driver error")}, 502, memory.ProblemAdapterError},
		{"deadline", &errStore{err: context.DeadlineExceeded}, 503, memory.ProblemUnavailable},
		{"panic", &errStore{panic: true}, 502, memory.ProblemAdapterError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.store.ExternalStore = inmemory.New(inmemory.Options{})
			f := newFixture(t, fixtureOpts{backend: tc.store})
			r := f.do("GET", "/v1/items/"+uuid.NewString(), "", false, nil)
			if r.status != tc.status || r.problem.Type != tc.typ {
				t.Fatalf("got %d %s", r.status, r.body)
			}
		})
	}
}

// blockingStore holds Store calls until released, to observe graceful shutdown.
type blockingStore struct {
	memory.ExternalStore
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) Store(ctx context.Context, it memory.Item) (uuid.UUID, error) {
	close(b.entered)
	<-b.release
	return b.ExternalStore.Store(ctx, it)
}

func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	bs := &blockingStore{ExternalStore: inmemory.New(inmemory.Options{}), entered: make(chan struct{}), release: make(chan struct{})}
	s, err := server.New(server.Config{Store: bs})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l, server.DefaultTimeouts, 0) }()

	it := memory.NewItem(json.RawMessage(`1`))
	base := "http://" + l.Addr().String()
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Post(base+"/v1/items", "application/json", strings.NewReader(itemJSON(t, it)))
		if err != nil {
			done <- result{err: err}
			return
		}
		_ = resp.Body.Close()
		done <- result{status: resp.StatusCode}
	}()
	<-bs.entered
	cancel()
	// Shutdown closes the listener first; poll until new connections are refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			break
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts connections after shutdown began")
		}
		runtime.Gosched()
	}
	close(bs.release)
	res := <-done
	if res.err != nil || res.status != http.StatusCreated {
		t.Fatalf("in-flight request: %d %v", res.status, res.err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if got, _ := bs.Retrieve(context.Background(), it.ID); got == nil {
		t.Fatal("the in-flight store did not complete")
	}
}

// TestDrainKeepsServingWithConnectionClose: after the context ends the server keeps
// accepting for t.Drain, reports itself shutting down, tells every client to drop its
// connection (Connection: close), and only then closes the listener.
func TestDrainKeepsServingWithConnectionClose(t *testing.T) {
	s, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tm := server.DefaultTimeouts
	tm.Drain = 2 * time.Second
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l, tm, 0) }()
	base := "http://" + l.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}
	// store stores an item and reports whether the answer asked to close the connection.
	store := func() bool {
		t.Helper()
		resp, err := client.Post(base+"/v1/items", "application/json", strings.NewReader(itemJSON(t, memory.NewItem(json.RawMessage(`1`)))))
		if err != nil {
			t.Fatalf("store: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("store: %d", resp.StatusCode)
		}
		return resp.Close
	}
	if store() {
		t.Fatal("a serving instance asked the client to close its connection")
	}
	cancel()
	began := time.Now()
	deadline := began.Add(10 * time.Second)
	for {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			t.Fatalf("healthz during the drain: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("healthz still answers 200 after the context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !store() {
		t.Fatal("an answer during the drain did not carry Connection: close")
	}
	for {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			break
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts connections long after the drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if waited := time.Since(began); waited < tm.Drain {
		t.Fatalf("the listener closed %v after the context ended, before the %v drain", waited, tm.Drain)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
