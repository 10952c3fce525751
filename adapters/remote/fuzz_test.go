package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/remote"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// FuzzResponses feeds arbitrary server answers to Retrieve and Search: the client must never
// panic, must return an item only with the requested id, and must fail with one of the
// contract's typed errors otherwise.
func FuzzResponses(f *testing.F) {
	id := uuid.MustParse("6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f")
	for _, s := range []struct {
		status int
		ct     string
		body   string
	}{
		{200, "application/json", `{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1.5,"tags":["a"]}`},
		{200, "application/json", `{"items":[{"id":"6f1c1b1e-8d2a-4c3b-9e1f-0a1b2c3d4e5f","created_at":1}]}`},
		{422, "application/problem+json", `{"type":"unsupported_query","title":"x","status":422,"rejected_keys":["b","a","a"]}`},
		{503, "application/problem+json", `{"type":"unavailable","title":"x","status":503}`},
		{404, "application/problem+json", `{"type":"not_found","title":"x","status":404}`},
		{200, "application/json", `{"items":null}`},
		{500, "text/html", `<h1>`},
	} {
		f.Add(s.status, s.ct, []byte(s.body))
	}
	var status atomic.Int64
	var ct atomic.Value
	var body atomic.Value
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/manifest" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"adapter":"x","native_item_fields":["id","created_at","metadata","content","tags"],"dropped_item_fields":[],"supported_filters":["a","b"],"search_consistency":"immediate","retrieve_fidelity":"full","search_fidelity":"full","search_returns_tags":true,"preserves_metadata":true}`))
			return
		}
		w.Header().Set("Content-Type", ct.Load().(string))
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write(body.Load().([]byte))
	}))
	f.Cleanup(hs.Close)
	rs, err := remote.New(context.Background(), remote.Options{BaseURL: hs.URL})
	if err != nil {
		f.Fatal(err)
	}
	typed := func(err error) bool {
		var ae *memory.MemoryAdapterError
		return errors.Is(err, memory.ErrAdapter) && errors.As(err, &ae)
	}
	f.Fuzz(func(t *testing.T, st int, contentType string, data []byte) {
		if st < 200 || st > 599 || strings.ContainsAny(contentType, "\r\n") {
			return
		}
		status.Store(int64(st))
		ct.Store(contentType)
		body.Store(data)
		it, err := rs.Retrieve(context.Background(), id)
		switch {
		case err != nil && (it != nil || !typed(err)):
			t.Fatalf("retrieve: item %v with untyped or extra error %v", it, err)
		case err == nil && it != nil && it.ID != id:
			t.Fatalf("retrieve returned item %s for %s", it.ID, id)
		}
		hits, err := rs.Search(context.Background(), memory.Query{Limit: 2})
		switch {
		case err != nil && (hits != nil || !typed(err)):
			t.Fatalf("search: %v with untyped or extra error %v", hits, err)
		case err == nil && (hits == nil || len(hits) > 2):
			t.Fatalf("search returned %d hits for limit 2", len(hits))
		}
	})
}
