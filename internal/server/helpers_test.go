package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/openapitest"
)

// countingStore counts the calls that reach the backend, so tests can prove that a rejected
// request never did.
type countingStore struct {
	memory.ExternalStore
	stores, retrieves, searches atomic.Int64
}

func (c *countingStore) Store(ctx context.Context, it memory.Item) (uuid.UUID, error) {
	c.stores.Add(1)
	return c.ExternalStore.Store(ctx, it)
}

func (c *countingStore) Retrieve(ctx context.Context, id uuid.UUID) (*memory.Item, error) {
	c.retrieves.Add(1)
	return c.ExternalStore.Retrieve(ctx, id)
}

func (c *countingStore) Search(ctx context.Context, q memory.Query) ([]memory.Item, error) {
	c.searches.Add(1)
	return c.ExternalStore.Search(ctx, q)
}

func (c *countingStore) total() int64 {
	return c.stores.Load() + c.retrieves.Load() + c.searches.Load()
}

// fakeProber reports whatever the test sets.
type fakeProber struct {
	mu  sync.Mutex
	ev  memory.Evidence
	err error
}

func (f *fakeProber) set(ev memory.Evidence, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ev, f.err = ev, err
}

func (f *fakeProber) Probe(context.Context) (memory.Evidence, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ev, f.err
}

type fixture struct {
	t      *testing.T
	srv    *server.Server
	http   *httptest.Server
	client *http.Client
	store  *countingStore
	token  string
}

type fixtureOpts struct {
	token string
	// tokens and scope, when set, replace token: a token file's grants over scope.
	tokens  server.TokenSource
	scope   string
	prober  memory.Prober
	maxBody int64
	backend memory.ExternalStore
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	backend := o.backend
	if backend == nil {
		backend = inmemory.New(inmemory.Options{SupportedFilters: []string{"branch_id", "source"}})
	}
	cs := &countingStore{ExternalStore: backend}
	s, err := server.New(server.Config{
		Store: cs, Prober: o.prober, AdapterVersion: "test-1", Token: []byte(o.token),
		MaxBodyBytes: o.maxBody, Tokens: o.tokens, Scope: o.scope,
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	s.Refresh(context.Background(), true)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &fixture{t: t, srv: s, http: hs, client: openapitest.NewTransport(t, nil).Client(), store: cs, token: o.token}
}

type response struct {
	status  int
	header  http.Header
	body    []byte
	problem memory.Problem
}

// do sends one request; hostile requests skip request validation but not response
// validation.
func (f *fixture) do(method, path, body string, hostile bool, hdr map[string]string) response {
	f.t.Helper()
	ctx := context.Background()
	if hostile {
		ctx = openapitest.Hostile(ctx)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.http.URL+path, rd)
	if err != nil {
		f.t.Fatalf("request: %v", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("read body: %v", err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: b}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		if err := json.Unmarshal(b, &r.problem); err != nil {
			f.t.Fatalf("problem body %q: %v", b, err)
		}
	}
	return r
}

func (f *fixture) backendCalls(op string) float64 {
	return testutil.ToFloat64(f.srv.BackendCalls(op))
}

func itemJSON(t *testing.T, it memory.Item) string {
	t.Helper()
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatalf("marshal item: %v", err)
	}
	return string(b)
}

// InScope hands out the backend's sub-scope views, uncounted, so that the fixture serves
// sub-scope grants when its backend does.
func (c *countingStore) InScope(ctx context.Context, scope string) (memory.ExternalStore, error) {
	ss, ok := c.ExternalStore.(memory.ScopedStore)
	if !ok {
		return nil, memory.NewAdapterError("the test backend has no sub-scopes", nil)
	}
	return ss.InScope(ctx, scope)
}

// serveInBackground runs srv.Serve on a loopback listener until the test ends (probing
// hourly) and returns the server's base URL.
func serveInBackground(t *testing.T, srv *server.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, l, server.Timeouts{ReadHeader: time.Second, Read: time.Second, Write: 5 * time.Second, Shutdown: time.Second}, time.Hour)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + l.Addr().String()
}
