package server_test

import (
	"context"
	"crypto/sha256"
	"net/http/httptest"
	"strings"

	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/inmemory"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/server"
	"github.com/agentmem/memory-adapter-operator/internal/server/openapitest"
)

// grantsFixture serves an in-memory store of scope "agents" with a token file of four
// bindings: the adapter's own token (full access to the scope), a read-write and a read-only
// token of sub-scope "planner" (the read-only one listed by its digest, as the operator
// lists other bindings'), and a read-write token of sub-scope "recaller".
func grantsFixture(t *testing.T, quota ...server.QuotaLimits) *fixture {
	t.Helper()
	digest := sha256.Sum256([]byte("planner-ro"))
	file := filepath.Join(t.TempDir(), "accepted-tokens")
	content := fmt.Sprintf("adapter\nplanner-rw sub-scope=planner\nsha256:%x sub-scope=planner read-only\nrecaller-rw sub-scope=recaller\n", digest[:])
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := server.LoadTokenFile(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(quota) == 0 {
		return newFixture(t, fixtureOpts{tokens: tf, scope: "agents"})
	}
	// A quota needs a store that counts its usage, which the fixture's counting wrapper
	// hides: serve the reference store itself.
	srv, err := server.New(server.Config{Store: inmemory.New(inmemory.Options{}), Tokens: tf, Scope: "agents", Quota: quota[0]})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &fixture{t: t, srv: srv, http: hs, client: openapitest.NewTransport(t, nil).Client()}
}

// TestSubScopesHaveQuotasOfTheirOwn: the items quota holds per sub-scope, as per scope: a
// full sub-scope answers 507 quota_exceeded and keeps what it acknowledged, while another
// sub-scope and the scope itself still take their own.
func TestSubScopesHaveQuotasOfTheirOwn(t *testing.T) {
	f := grantsFixture(t, server.QuotaLimits{MaxItems: 1})
	kept := memory.NewItem(json.RawMessage(`"the planner's one item"`))
	if r := f.as("planner-rw", "POST", "/v1/items", itemJSON(t, kept)); r.status != http.StatusCreated {
		t.Fatalf("first store: %d %s", r.status, r.body)
	}
	r := f.as("planner-rw", "POST", "/v1/items", itemJSON(t, memory.NewItem(json.RawMessage(`"one too many"`))))
	if r.status != http.StatusInsufficientStorage || r.problem.Type != memory.ProblemQuotaExceeded {
		t.Fatalf("second store in a full sub-scope: %d %+v, want 507 quota_exceeded", r.status, r.problem)
	}
	if r := f.as("planner-ro", "GET", "/v1/items/"+kept.ID.String(), ""); r.status != http.StatusOK {
		t.Errorf("the acknowledged item after the refusal: %d", r.status)
	}
	for _, tok := range []string{"recaller-rw", "adapter"} {
		it := memory.NewItem(json.RawMessage(`"another scope's first item"`))
		if r := f.as(tok, "POST", "/v1/items", itemJSON(t, it)); r.status != http.StatusCreated {
			t.Errorf("%s's first store: %d %s, want 201: the quota is per scope", tok, r.status, r.body)
		}
	}
}

func (f *fixture) as(token, method, path, body string) response {
	f.t.Helper()
	return f.do(method, path, body, false, map[string]string{"Authorization": "Bearer " + token})
}

// TestReadOnlyGrantIsRefusedEveryStore: a read-only token's store is 403 forbidden before
// the backend is called, and nothing is stored; its retrieve and search work in its
// sub-scope.
func TestReadOnlyGrantIsRefusedEveryStore(t *testing.T) {
	f := grantsFixture(t)
	written := memory.NewItem(json.RawMessage(`"written by the planner"`), "plan")
	if r := f.as("planner-rw", "POST", "/v1/items", itemJSON(t, written)); r.status != http.StatusCreated {
		t.Fatalf("read-write store: %d %s", r.status, r.body)
	}
	refused := memory.NewItem(json.RawMessage(`"must not land"`))
	r := f.as("planner-ro", "POST", "/v1/items", itemJSON(t, refused))
	if r.status != http.StatusForbidden || r.problem.Type != memory.ProblemForbidden {
		t.Fatalf("read-only store: %d %+v, want 403 forbidden", r.status, r.problem)
	}
	if n := f.backendCalls("store"); n != 1 {
		t.Errorf("backend stores = %v, want 1 (the read-write one)", n)
	}
	for _, tok := range []string{"planner-rw", "planner-ro"} {
		if r := f.as(tok, "GET", "/v1/items/"+refused.ID.String(), ""); r.status != http.StatusNotFound {
			t.Errorf("%s retrieves the refused item: %d %s", tok, r.status, r.body)
		}
	}
	if r := f.as("planner-ro", "GET", "/v1/items/"+written.ID.String(), ""); r.status != http.StatusOK {
		t.Errorf("read-only retrieve of its sub-scope's item: %d %s", r.status, r.body)
	}
	if r := f.as("planner-ro", "POST", "/v1/search", `{"tags":["plan"],"limit":10}`); r.status != http.StatusOK || !hasID(t, r.body, written.ID.String()) {
		t.Errorf("read-only search: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/v1/manifest", "/v1/evidence"} {
		if r := f.as("planner-ro", "GET", path, ""); r.status != http.StatusOK {
			t.Errorf("read-only GET %s: %d", path, r.status)
		}
	}
}

// TestSubScopeGrantsSeeOnlyTheirOwnItems: the same id stored under three grants is three
// items; none retrieves or finds another's, and the adapter's own token works in the scope.
func TestSubScopeGrantsSeeOnlyTheirOwnItems(t *testing.T) {
	f := grantsFixture(t)
	base := memory.NewItem(json.RawMessage(`"x"`), "shared")
	for _, tok := range []string{"adapter", "planner-rw", "recaller-rw"} {
		it := base
		it.Content = json.RawMessage(fmt.Sprintf("%q", "stored by "+tok))
		if r := f.as(tok, "POST", "/v1/items", itemJSON(t, it)); r.status != http.StatusCreated {
			t.Fatalf("%s store: %d %s", tok, r.status, r.body)
		}
	}
	only := memory.NewItem(json.RawMessage(`"the recaller's alone"`), "shared")
	if r := f.as("recaller-rw", "POST", "/v1/items", itemJSON(t, only)); r.status != http.StatusCreated {
		t.Fatalf("store: %d %s", r.status, r.body)
	}
	for _, tok := range []string{"adapter", "planner-rw", "recaller-rw"} {
		r := f.as(tok, "GET", "/v1/items/"+base.ID.String(), "")
		var got memory.Item
		if err := json.Unmarshal(r.body, &got); err != nil || string(got.Content) != fmt.Sprintf("%q", "stored by "+tok) {
			t.Errorf("%s retrieves %s, want its own", tok, r.body)
		}
		r = f.as(tok, "POST", "/v1/search", `{"tags":["shared"],"limit":10}`)
		if want := tok == "recaller-rw"; hasID(t, r.body, only.ID.String()) != want {
			t.Errorf("%s's search finds the recaller's item: %v, want %v (%s)", tok, !want, want, r.body)
		}
	}
	if r := f.as("planner-rw", "GET", "/v1/items/"+only.ID.String(), ""); r.status != http.StatusNotFound {
		t.Errorf("planner retrieves the recaller's item: %d", r.status)
	}
	if r := f.as("nobody", "GET", "/v1/items/"+only.ID.String(), ""); r.status != http.StatusUnauthorized {
		t.Errorf("an unknown token: %d, want 401", r.status)
	}
}

// TestSubScopeGrantOnABackendWithoutSubScopes: the call is refused as adapter_error, never
// served from the scope itself.
func TestSubScopeGrantOnABackendWithoutSubScopes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "accepted-tokens")
	if err := os.WriteFile(file, []byte("sub sub-scope=planner\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := server.LoadTokenFile(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: unscoped{inmemory.New(inmemory.Options{})}, Tokens: tf, Scope: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Refresh(context.Background(), true)
	req := httptest.NewRequest("POST", "/v1/search", strings.NewReader(`{"limit":10}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sub")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	var p memory.Problem
	_ = json.Unmarshal(rec.Body.Bytes(), &p)
	if rec.Code != http.StatusBadGateway || p.Type != memory.ProblemAdapterError {
		t.Errorf("search: %d %s, want 502 adapter_error", rec.Code, rec.Body)
	}
}

// unscoped hides a backend's InScope.
type unscoped struct{ memory.ExternalStore }

func hasID(t *testing.T, body []byte, id string) bool {
	t.Helper()
	var res struct {
		Items []memory.Item `json:"items"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("search body %s: %v", body, err)
	}
	for _, it := range res.Items {
		if it.ID.String() == id {
			return true
		}
	}
	return false
}
