package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/storetest"
)

func newHarness(t *testing.T) *Harness {
	t.Helper()
	h, err := NewHarness(context.Background(), HarnessOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("NewHarness: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("harness Close: %v", err)
		}
	})
	return h
}

func newStore(t *testing.T, h *Harness) *Store {
	t.Helper()
	s, err := h.MakeStore(context.Background())
	if err != nil {
		t.Fatalf("MakeStore: %v", err)
	}
	return s.(*Store)
}

// The shared helpers under their historical local names.
var (
	mustStore    = storetest.MustStore
	mustRetrieve = storetest.MustRetrieve
	ptr          = storetest.Text
)

// factory gives the shared behaviour tests a fresh harness on an empty scope per call.
func factory(t *testing.T) storetest.Harness { return newHarness(t) }

// TestExactnessFixtures covers contract.md §3 through the shared fixtures plus U+0000 inside
// JSON strings, metadata values and tags (which SQLite stores exactly), then checks that the raw
// JSON text keeps the big integer's digits.
func TestExactnessFixtures(t *testing.T) {
	h := newHarness(t)
	storetest.Exactness(t, func(*testing.T) storetest.Harness { return h }, storetest.Fixture{Name: "u0000-in-json-string", Item: memory.Item{
		Content:  json.RawMessage(`{"s":"a\u0000b"}`),
		Metadata: map[string]json.RawMessage{"source": json.RawMessage(`"x\u0000y"`)},
		Tags:     []string{"nul\x00tag"},
	}})
	// The big integer's digits are kept verbatim, not through float64.
	var raw string
	if err := h.admin.QueryRow(`SELECT content FROM memory_items WHERE content LIKE '%12345678901234567890123%'`).Scan(&raw); err != nil {
		t.Fatalf("big integer digits not stored verbatim: %v", err)
	}
}

// TestLiteralTextSearch: %, _, * and regex metacharacters are literal; text folds case.
func TestLiteralTextSearch(t *testing.T) { storetest.LiteralText(t, factory) }

// TestSearchPredicatesAndOrder: predicates alone and together, insertion order, replacement.
func TestSearchPredicatesAndOrder(t *testing.T) { storetest.PredicatesAndOrder(t, factory) }

// TestRejectsBeforeIO: unsupported queries and malformed or oversized items are refused.
func TestRejectsBeforeIO(t *testing.T) {
	h := newHarness(t)
	storetest.RejectsInvalidInput(t, func(*testing.T) storetest.Harness { return h })
	// Oversized items are refused.
	small, err := Open(context.Background(), Options{Path: h.Path(), Scope: h.Scope(), MaxItemBytes: 64})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer small.Close()
	big := memory.NewItem(json.RawMessage(fmt.Sprintf("%q", make([]byte, 100))))
	if _, err := small.Store(context.Background(), big); !errors.Is(err, memory.ErrAdapter) {
		t.Fatalf("oversized item: got %v, want MemoryAdapterError", err)
	}
}

func TestWrongKindAndScopeIsolation(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	id, err := h.MakeWrongKindRecord(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Retrieve(context.Background(), id); err != nil || got != nil {
		t.Fatalf("wrong-kind retrieve: got %v, %v; want nil, nil", got, err)
	}
	hits, err := s.Search(context.Background(), memory.Query{Text: ptr("not a memory"), Limit: 10})
	if err != nil || len(hits) != 0 {
		t.Fatalf("wrong-kind search: got %d hits, %v", len(hits), err)
	}
	over := memory.NewItem(json.RawMessage(`1`))
	over.ID = id
	if _, err := s.Store(context.Background(), over); !errors.Is(err, memory.ErrAdapter) {
		t.Fatalf("store over a wrong-kind record: got %v, want MemoryAdapterError", err)
	}

	other, err := Open(context.Background(), Options{Path: h.Path(), Scope: "other-scope"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	it := memory.NewItem(json.RawMessage(`"mine"`))
	mustStore(t, s, it)
	if got, err := other.Retrieve(context.Background(), it.ID); err != nil || got != nil {
		t.Fatalf("other scope sees the item: %v, %v", got, err)
	}
	if hits, err := other.Search(context.Background(), memory.Query{Limit: 10}); err != nil || len(hits) != 0 {
		t.Fatalf("other scope search: %d hits, %v", len(hits), err)
	}
}

func TestRejectedWriteByService(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	it, err := h.MakeWriteRejected(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.Store(context.Background(), it)
	if !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) || id != uuid.Nil {
		t.Fatalf("rejected write: got %v, %v; want uuid.Nil and MemoryAdapterError", id, err)
	}
	if err := h.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustStore(t, s, it)
}

func TestOutageAndRecovery(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	it := memory.NewItem(json.RawMessage(`"before the cut"`))
	mustStore(t, s, it)
	if err := h.MakeTransportUnavailable(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := s.Store(ctx, memory.NewItem(json.RawMessage(`1`)))
	t.Logf("store during outage: %v", err)
	if !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("store during outage: got %v, want MemoryAdapterUnavailable", err)
	}
	if got, err := s.Retrieve(ctx, it.ID); !errors.Is(err, memory.ErrUnavailable) || got != nil {
		t.Errorf("retrieve during outage: got %v, %v, want MemoryAdapterUnavailable", got, err)
	}
	if hits, err := s.Search(ctx, memory.Query{Limit: 5}); !errors.Is(err, memory.ErrUnavailable) || hits != nil {
		t.Errorf("search during outage: got %v, %v, want MemoryAdapterUnavailable", hits, err)
	}
	if _, err := s.Probe(ctx); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("probe during outage: got %v, want MemoryAdapterUnavailable", err)
	}
	if _, err := h.MakeStore(ctx); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("new store during outage: got %v, want MemoryAdapterUnavailable", err)
	}
	// Restoring the file restores the same adapter instance, with the data intact.
	if err := h.restoreForTest(); err != nil {
		t.Fatal(err)
	}
	got := mustRetrieve(t, s, it.ID)
	if !got.Equal(it) {
		t.Fatalf("after recovery: differs in %v", got.Diff(it))
	}
}

func (h *Harness) restoreForTest() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.restoreLocked()
}

func TestClosedStore(t *testing.T) {
	h := newHarness(t)
	s, err := Open(context.Background(), Options{Path: h.Path(), Scope: h.Scope()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Retrieve(context.Background(), uuid.New()); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("retrieve after Close: got %v, want MemoryAdapterUnavailable", err)
	}
}

func TestOpenValidatesOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []Options{
		{Path: "", Scope: "s"},
		{Path: filepath.Join(dir, "a.db"), Scope: ""},
		{Path: filepath.Join(dir, "a.db"), Scope: "has space"},
		{Path: filepath.Join(dir, "a.db"), Scope: "s", SupportedFilters: []string{""}},
	} {
		if _, err := Open(context.Background(), o); !errors.Is(err, memory.ErrAdapter) {
			t.Errorf("Open(%+v): got %v, want MemoryAdapterError", o, err)
		}
	}
}

func TestProbe(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	ev, err := s.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.ServiceVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev.ServiceVersion != v || len(ev.Probes) != 3 || !ev.AllOK() {
		t.Fatalf("probe: %+v (harness version %q)", ev, v)
	}
}

// TestConcurrentWritersLoseNothing stores from many goroutines over two store instances
// while others search, then checks every acknowledged write is retrievable and searchable.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	storetest.ConcurrentWritersLoseNothing(t, factory, 40)
}

func TestHarnessAdapterID(t *testing.T) {
	h, err := NewHarness(context.Background(), HarnessOptions{Dir: t.TempDir(), AdapterID: "sqlite-team-a", SupportedFilters: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	s := newStore(t, h)
	if m := s.Manifest(); m.Adapter != "sqlite-team-a" || !slices.Equal(m.SupportedFilters, []string{"k"}) {
		t.Fatalf("manifest %+v", m)
	}
}
