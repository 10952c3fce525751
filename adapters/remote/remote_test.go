package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/openapitest"
)

// scripted serves the real manifest and answers data routes with a fixed response.
type scripted struct {
	status      int
	contentType string
	body        string
	manifests   atomic.Int64
	data        atomic.Int64
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/manifest" {
		s.manifests.Add(1)
		b, _ := json.Marshal(inmemory.Manifest(memory.DefaultSupportedFilters()))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	s.data.Add(1)
	w.Header().Set("Content-Type", s.contentType)
	w.WriteHeader(s.status)
	_, _ = w.Write([]byte(s.body))
}

func newScripted(t *testing.T, status int, ct, body string) (*remote.Store, *scripted) {
	t.Helper()
	sc := &scripted{status: status, contentType: ct, body: body}
	hs := httptest.NewServer(sc)
	t.Cleanup(hs.Close)
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	return rs, sc
}

func TestErrorMapping(t *testing.T) {
	const pj = "application/problem+json"
	item := memory.NewItem(json.RawMessage(`1`))
	cases := []struct {
		name, ct, body string
		status         int
		// check inspects the error of a Retrieve call.
		check func(*memory.Item, error) bool
	}{
		{"not_found is None", pj, `{"type":"not_found","title":"Not found","status":404}`, 404,
			func(it *memory.Item, err error) bool { return it == nil && err == nil }},
		{"unavailable", pj, `{"type":"unavailable","title":"x","status":503,"detail":"db down"}`, 503,
			func(_ *memory.Item, err error) bool {
				var pe *remote.ProblemError
				return errors.Is(err, memory.ErrUnavailable) && errors.As(err, &pe) && pe.Problem.Detail == "db down"
			}},
		{"adapter_error", pj, `{"type":"adapter_error","title":"x","status":502}`, 502,
			func(_ *memory.Item, err error) bool {
				return errors.Is(err, memory.ErrAdapter) && !errors.Is(err, memory.ErrUnavailable)
			}},
		{"unauthorized is an adapter error", pj, `{"type":"unauthorized","title":"x","status":401}`, 401,
			func(_ *memory.Item, err error) bool {
				return errors.Is(err, memory.ErrAdapter) && !errors.Is(err, memory.ErrUnavailable) && strings.Contains(err.Error(), "unauthorized")
			}},
		{"forbidden (a read-only binding's store) is an adapter error, never unavailable", pj, `{"type":"forbidden","title":"Forbidden","status":403}`, 403,
			func(_ *memory.Item, err error) bool {
				var pe *remote.ProblemError
				return errors.Is(err, memory.ErrAdapter) && !errors.Is(err, memory.ErrUnavailable) && errors.As(err, &pe) && pe.Problem.Type == memory.ProblemForbidden
			}},
		{"gateway page is unavailable", "text/html", `<html>bad gateway</html>`, 502,
			func(_ *memory.Item, err error) bool { return errors.Is(err, memory.ErrUnavailable) }},
		{"teapot is an adapter error", "text/plain", `?`, 418,
			func(_ *memory.Item, err error) bool {
				return errors.Is(err, memory.ErrAdapter) && !errors.Is(err, memory.ErrUnavailable)
			}},
		{"malformed item chains the cause", "application/json", `{"id":42}`, 200,
			func(it *memory.Item, err error) bool {
				var ae *memory.MemoryAdapterError
				var se *json.UnmarshalTypeError
				return it == nil && errors.As(err, &ae) && !errors.Is(err, memory.ErrUnavailable) && (errors.As(err, &se) || ae.Err != nil)
			}},
		{"unknown field in item", "application/json", `{"id":"` + item.ID.String() + `","created_at":1,"score":1}`, 200,
			func(it *memory.Item, err error) bool { return it == nil && errors.Is(err, memory.ErrAdapter) }},
		{"different id", "application/json", `{"id":"` + uuid.NewString() + `","created_at":1}`, 200,
			func(it *memory.Item, err error) bool { return it == nil && errors.Is(err, memory.ErrAdapter) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs, _ := newScripted(t, tc.status, tc.ct, tc.body)
			it, err := rs.Retrieve(context.Background(), item.ID)
			if !tc.check(it, err) {
				t.Fatalf("got %v, %v", it, err)
			}
		})
	}
}

func TestStoreRequiresTheItemsOwnID(t *testing.T) {
	item := memory.NewItem(json.RawMessage(`1`))
	for name, body := range map[string]string{
		"no id":        `{}`,
		"other id":     `{"id":"` + uuid.NewString() + `"}`,
		"invalid id":   `{"id":"nope"}`,
		"not json":     `ok`,
		"extra fields": `{"id":"` + item.ID.String() + `","x":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			rs, _ := newScripted(t, 201, "application/json", body)
			id, err := rs.Store(context.Background(), item)
			if id != uuid.Nil || !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
				t.Fatalf("got %v, %v", id, err)
			}
		})
	}
}

func TestQueriesAreCheckedBeforeTransport(t *testing.T) {
	rs, sc := newScripted(t, 500, "text/plain", "must not be called")
	_, err := rs.Search(context.Background(), memory.Query{Filters: map[string]json.RawMessage{"z": []byte(`1`), "a": []byte(`2`), "source": []byte(`3`)}, Limit: -1})
	var uq *memory.UnsupportedMemoryQuery
	if !errors.As(err, &uq) || !slices.Equal(uq.RejectedKeys, []string{"a", "limit", "z"}) {
		t.Fatalf("got %v", err)
	}
	hits, err := rs.Search(context.Background(), memory.Query{Limit: 0})
	if err != nil || hits == nil || len(hits) != 0 {
		t.Fatalf("limit 0: %v, %v", hits, err)
	}
	if n := sc.data.Load(); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
	// A search the server answers with more items than the limit is a contract violation.
	rs2, _ := newScripted(t, 200, "application/json", `{"items":[{"id":"`+uuid.NewString()+`","created_at":1},{"id":"`+uuid.NewString()+`","created_at":2}]}`)
	if _, err := rs2.Search(context.Background(), memory.Query{Limit: 1}); !errors.Is(err, memory.ErrAdapter) {
		t.Fatalf("over-limit answer: %v", err)
	}
}

func TestManifestIsFetchedOnceAndKept(t *testing.T) {
	rs, sc := newScripted(t, 404, "application/problem+json", `{"type":"not_found","title":"x","status":404}`)
	for range 3 {
		_, _ = rs.Retrieve(context.Background(), uuid.New())
		_ = rs.Manifest()
	}
	if n := sc.manifests.Load(); n != 1 {
		t.Fatalf("manifest fetched %d times", n)
	}
}

func TestTransportFailuresAreUnavailable(t *testing.T) {
	// Nothing listens on a port we just released.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, err = remote.New(context.Background(), remote.Options{BaseURL: "http://" + addr})
	if !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("construction against a closed port: %v", err)
	}
	// A server that dies after construction.
	s, _ := server.New(server.Config{Store: inmemory.New(inmemory.Options{})})
	hs := httptest.NewServer(s.Handler())
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	hs.Close()
	if _, err := rs.Store(context.Background(), memory.NewItem(json.RawMessage(`1`))); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("store after the server died: %v", err)
	}
	if _, err := rs.Search(context.Background(), memory.Query{Limit: 3}); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("search after the server died: %v", err)
	}
	if _, err := remote.New(context.Background(), remote.Options{BaseURL: "ftp://x"}); err == nil || errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("bad base URL: %v", err)
	}
}

// TestAgainstTheRealServerAndDocument runs the client against the real server with every
// exchange validated against the OpenAPI document.
func TestAgainstTheRealServerAndDocument(t *testing.T) {
	hs := serve(t, inmemory.New(inmemory.Options{}), "k")
	client := openapitest.NewTransport(t, nil).Client()
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL + "/", Token: "k", HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	it := memory.NewItem(json.RawMessage(`{"big":123456789012345678901234567890}`), "x", "x")
	it.Metadata["source"] = json.RawMessage(`"s"`)
	if id, err := rs.Store(context.Background(), it); err != nil || id != it.ID {
		t.Fatalf("store: %v %v", id, err)
	}
	got, err := rs.Retrieve(context.Background(), it.ID)
	if err != nil || got == nil || !got.Equal(it) {
		t.Fatalf("retrieve: %+v %v", got, err)
	}
	hits, err := rs.Search(context.Background(), memory.Query{Tags: []string{"x"}, Filters: map[string]json.RawMessage{"source": []byte(`"s"`)}, Limit: 5})
	if err != nil || len(hits) != 1 || !hits[0].Equal(it) {
		t.Fatalf("search: %v %v", hits, err)
	}
	ev, err := rs.Evidence(context.Background())
	if err != nil || !ev.ManifestValid || ev.ManifestHash != rs.Manifest().Hash() {
		t.Fatalf("evidence: %+v %v", ev, err)
	}
	bad, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL, Token: "wrong", HTTPClient: client})
	if bad != nil || !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("wrong token: %v", err)
	}
}

// TestAForeignAnswerIsNotReusedThroughTheSameConnection: a response that is not the adapter
// server's (no problem body) names what answered, and the next call dials a new connection
// instead of reusing the one that reached the wrong peer. A problem answer keeps the
// connection.
func TestAForeignAnswerIsNotReusedThroughTheSameConnection(t *testing.T) {
	for name, tc := range map[string]struct {
		ct, body  string
		wantConns int64
		wantText  string
	}{
		"foreign 404":        {"", "", 2, `unexpected HTTP 404 (no content type: "")`},
		"foreign plain text": {"text/plain", "404 page not found\n", 2, `(text/plain: "404 page not found.")`},
		"adapter problem":    {"application/problem+json", `{"type":"not_found","title":"Not found","status":404}`, 1, ""},
	} {
		t.Run(name, func(t *testing.T) {
			sc := &scripted{status: http.StatusNotFound, contentType: tc.ct, body: tc.body}
			hs := httptest.NewUnstartedServer(sc)
			var conns atomic.Int64
			hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			hs.Start()
			t.Cleanup(hs.Close)
			rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL})
			if err != nil {
				t.Fatal(err)
			}
			_, err = rs.Retrieve(context.Background(), uuid.New())
			if tc.wantText != "" && (err == nil || !strings.Contains(err.Error(), tc.wantText)) {
				t.Fatalf("error %v, want one containing %s", err, tc.wantText)
			}
			if _, err := rs.Retrieve(context.Background(), uuid.New()); tc.wantText != "" && err == nil {
				t.Fatal("the second call succeeded")
			}
			if got := conns.Load(); got != tc.wantConns {
				t.Fatalf("%d connections for manifest + two retrieves, want %d", got, tc.wantConns)
			}
		})
	}
}
