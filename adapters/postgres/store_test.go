package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/agentmem/memory-adapter-operator/internal/storetest"
)

func newHarness(t *testing.T) *Harness {
	t.Helper()
	h, err := NewHarness(context.Background(), HarnessOptions{URL: testURL})
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

// TestExactnessFixtures covers contract.md §3 through the shared fixtures, then checks that
// the raw JSON text keeps the big integer's digits. PostgreSQL rejects U+0000 (see
// TestRejectsWhatPostgresCannotStore), so only the shared escaped-text fixture runs here.
func TestExactnessFixtures(t *testing.T) {
	h := newHarness(t)
	storetest.Exactness(t, func(*testing.T) storetest.Harness { return h })
	// The big integer's digits are kept verbatim, not through float64.
	var raw string
	if err := h.admin.QueryRow(context.Background(), `SELECT content::text FROM `+h.table()+` WHERE content::text LIKE '%12345678901234567890123%'`).Scan(&raw); err != nil {
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
	o := h.StoreOptions()
	o.MaxItemBytes = 64
	small, err := Open(context.Background(), o)
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

	o := h.StoreOptions()
	o.Scope = "other-scope"
	other, err := Open(context.Background(), o)
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
	// Restoring the transport restores the same adapter instance, with the data intact.
	h.Proxy().Restore()
	got := mustRetrieve(t, s, it.ID)
	if !got.Equal(it) {
		t.Fatalf("after recovery: differs in %v", got.Diff(it))
	}
}

func TestClosedStore(t *testing.T) {
	h := newHarness(t)
	s, err := Open(context.Background(), h.StoreOptions())
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
	for _, o := range []Options{
		{URL: testURL, Scope: ""},
		{URL: testURL, Scope: "has space"},
		{URL: testURL, Scope: "s", Schema: "Bad-Schema"},
		{URL: testURL, Scope: "s", SupportedFilters: []string{""}},
		{URL: "postgres://user:s3cr3t-pw@[::1", Scope: "s"},
	} {
		_, err := Open(context.Background(), o)
		if !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("Open(scope %q, schema %q): got %v, want MemoryAdapterError", o.Scope, o.Schema, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
	// An unreachable server is unavailability, and the password stays out of the message.
	_, err := Open(context.Background(), Options{URL: "postgres://mao:s3cr3t-pw@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2", Scope: "s"})
	if !errors.Is(err, memory.ErrUnavailable) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Open(unreachable): got %v, want MemoryAdapterUnavailable without the password", err)
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
	if ev.ServiceVersion != v || len(ev.Probes) != 4 || !ev.AllOK() {
		t.Fatalf("probe: %+v (harness version %q)", ev, v)
	}
}

// TestConcurrentWritersLoseNothing stores from many goroutines over two store instances
// while others search, then checks every acknowledged write is retrievable and searchable.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	storetest.ConcurrentWritersLoseNothing(t, factory, 40)
}

func TestHarnessAdapterID(t *testing.T) {
	h, err := NewHarness(context.Background(), HarnessOptions{URL: testURL, AdapterID: "postgres-team-a", SupportedFilters: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	s := newStore(t, h)
	if m := s.Manifest(); m.Adapter != "postgres-team-a" || !slices.Equal(m.SupportedFilters, []string{"k"}) {
		t.Fatalf("manifest %+v", m)
	}
}
