package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
)

// probingHarness is a minimal conformance harness over inmemory whose stores probe as
// unreachable while the harness has cut the backend.
type probingHarness struct {
	mu     sync.Mutex
	cut    bool
	resets int
}

type probingStore struct {
	memory.ExternalStore
	h *probingHarness
}

func (s probingStore) Probe(context.Context) (memory.Evidence, error) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.cut {
		return memory.Evidence{}, errors.New("cut")
	}
	return memory.Evidence{ServiceVersion: "v1"}, nil
}

func (h *probingHarness) MakeStore(context.Context) (memory.ExternalStore, error) {
	return probingStore{inmemory.New(inmemory.Options{}), h}, nil
}

func (h *probingHarness) Reset(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = false
	h.resets++
	return nil
}

func (h *probingHarness) MakeSearchIndexVisible(context.Context) error { return nil }

func (h *probingHarness) MakeTransportUnavailable(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut = true
	return nil
}

func (h *probingHarness) Close(context.Context) error { return nil }

func TestHarnessProtocol(t *testing.T) {
	ctx := t.Context()
	hs, err := server.NewHarnessStore(ctx, &probingHarness{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: hs, Prober: hs, Token: []byte("data")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(ctx, true)
	if _, err := srv.HarnessHandler(server.HarnessConfig{Store: hs}); err == nil {
		t.Fatal("a harness handler without a token was built")
	}
	h, err := srv.HarnessHandler(server.HarnessConfig{Store: hs, Token: []byte("harness"), DuplicateIDBehaviour: "Overwrite"})
	if err != nil {
		t.Fatal(err)
	}
	data, harness := httptest.NewServer(srv.Handler()), httptest.NewServer(h)
	t.Cleanup(data.Close)
	t.Cleanup(harness.Close)

	call := func(base, method, path, token, ctype, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(path string) int {
		status, _ := call(harness.URL, http.MethodPost, path, "harness", "application/json", "{}")
		return status
	}
	item := memory.NewItem(json.RawMessage(`{"x":1}`))
	itemBody, _ := json.Marshal(item)

	for _, tc := range []struct {
		name, method, path, token, ctype string
		want                             int
	}{
		{"no token", http.MethodGet, "/harness/v1/capabilities", "", "", 401},
		{"the data token", http.MethodGet, "/harness/v1/capabilities", "data", "", 401},
		{"harness token", http.MethodGet, "/harness/v1/capabilities", "harness", "", 200},
		{"absent capability", http.MethodPost, "/harness/v1/wrong-kind-record", "harness", "application/json", 404},
		{"not JSON", http.MethodPost, "/harness/v1/reset", "harness", "text/plain", 415},
		{"wrong method", http.MethodGet, "/harness/v1/reset", "harness", "", 404},
	} {
		if status, body := call(harness.URL, tc.method, tc.path, tc.token, tc.ctype, "{}"); status != tc.want {
			t.Errorf("%s: %s %s answered %d %s, want %d", tc.name, tc.method, tc.path, status, body, tc.want)
		}
	}
	if _, body := call(harness.URL, http.MethodGet, "/harness/v1/capabilities", "harness", "", ""); !strings.Contains(body, `"backend_calls"`) ||
		strings.Contains(body, "wrong_kind_record") || !strings.Contains(body, `"duplicate_id_behaviour":"Overwrite"`) {
		t.Errorf("capabilities %s", body)
	}
	// The data wire never serves the harness paths.
	if status, _ := call(data.URL, http.MethodPost, "/harness/v1/reset", "data", "application/json", "{}"); status != 404 {
		t.Errorf("the data listener answered %d to a harness path", status)
	}

	// backend_calls counts what reached the store, and only that.
	before := hs.BackendCalls()
	if status, _ := call(data.URL, http.MethodPost, "/v1/search", "data", "application/json", `{"limit":0}`); status != 200 || hs.BackendCalls() != before {
		t.Errorf("limit 0: %d, backend calls %d → %d", status, before, hs.BackendCalls())
	}
	if status, _ := call(data.URL, http.MethodPost, "/v1/items", "data", "application/json", string(itemBody)); status != 201 || hs.BackendCalls() != before+1 {
		t.Errorf("store: %d, backend calls %d → %d", status, before, hs.BackendCalls())
	}

	// Generic faults: the server refuses to pass them on; reset clears them and the scope.
	for _, tc := range []struct {
		fault, method, path, body string
	}{
		{"/harness/v1/responses-malformed", http.MethodGet, "/v1/items/" + item.ID.String(), ""},
		{"/harness/v1/responses-malformed", http.MethodPost, "/v1/search", `{"limit":5}`},
		{"/harness/v1/identityless-write", http.MethodPost, "/v1/items", string(itemBody)},
	} {
		if status := post(tc.fault); status != 204 {
			t.Fatalf("%s answered %d", tc.fault, status)
		}
		if status, body := call(data.URL, tc.method, tc.path, "data", "application/json", tc.body); status != 502 || !strings.Contains(body, "adapter_error") {
			t.Errorf("after %s, %s %s answered %d %s, want 502 adapter_error", tc.fault, tc.method, tc.path, status, body)
		}
		if status := post("/harness/v1/reset"); status != 204 {
			t.Fatalf("reset answered %d", status)
		}
	}
	if status, _ := call(data.URL, http.MethodGet, "/v1/items/"+item.ID.String(), "data", "", ""); status != 404 {
		t.Errorf("after reset the stored item answered %d, want 404 (empty scope)", status)
	}

	// A cut backend invalidates the evidence; the reset restores it at once, without waiting
	// for the next probe.
	if status := post("/harness/v1/transport-unavailable"); status != 204 {
		t.Fatalf("transport-unavailable answered %d", status)
	}
	if ev := srv.Refresh(ctx, true); ev.ManifestValid {
		t.Fatal("the evidence stayed valid with the backend cut")
	}
	if status := post("/harness/v1/reset"); status != 204 {
		t.Fatalf("reset answered %d", status)
	}
	if !srv.Valid() {
		t.Error("the manifest is still invalid after the reset restored the backend")
	}
}
