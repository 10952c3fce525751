package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func newHarness(t *testing.T) *Harness {
	t.Helper()
	return newHarnessWith(t, HarnessOptions{URL: testURL})
}

// newHarnessWith makes a harness from o and registers its checked Close with t.
func newHarnessWith(t *testing.T, o HarnessOptions) *Harness {
	t.Helper()
	h, err := NewHarness(context.Background(), o)
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
	mustStore = storetest.MustStore
	ptr       = storetest.Text
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
	storetest.RejectsOversized(t, func(n int) (storetest.ClosableStore, error) {
		o := h.StoreOptions()
		o.MaxItemBytes = n
		return Open(context.Background(), o)
	})
}

// TestWrongKindAndScopeIsolation: a row of another kind is invisible and not overwritten;
// another scope in the same schema sees nothing of this one.
func TestWrongKindAndScopeIsolation(t *testing.T) {
	h := newHarness(t)
	storetest.WrongKindAndScopeIsolation(t, h, func(t *testing.T, scope string) memory.Store {
		o := h.StoreOptions()
		o.Scope = scope
		other, err := Open(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = other.Close() })
		return other
	})
}

// TestRejectedWriteByService: a write a PostgreSQL trigger raises on is a MemoryAdapterError.
func TestRejectedWriteByService(t *testing.T) { storetest.RejectedWriteByService(t, newHarness(t)) }

// TestOutageAndRecovery: with the proxy cut every call is unavailable; restoring the
// transport restores the same adapter instance, with the data intact.
func TestOutageAndRecovery(t *testing.T) {
	h := newHarness(t)
	storetest.OutageAndRecovery(t, h, storetest.Outage{Restore: func() error {
		h.Proxy().Restore()
		return nil
	}})
}

// TestClosedStore: Close is idempotent and a closed store is unavailable.
func TestClosedStore(t *testing.T) {
	h := newHarness(t)
	storetest.ClosedStore(t, func(t *testing.T) storetest.ClosableStore {
		s, err := Open(context.Background(), h.StoreOptions())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
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

// TestProbe: the probe reports the harness's server version and four passing checks.
func TestProbe(t *testing.T) { storetest.Probe(t, newHarness(t), 4) }

// TestConcurrentWritersLoseNothing stores from many goroutines over two store instances
// while others search, then checks every acknowledged write is retrievable and searchable.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	storetest.ConcurrentWritersLoseNothing(t, factory, 40)
}

// TestHarnessAdapterID: the harness's adapter id and filter set reach the store's manifest.
func TestHarnessAdapterID(t *testing.T) {
	storetest.HarnessAdapterID(t, "postgres-team-a", func(t *testing.T, id string, filters []string) storetest.Harness {
		return newHarnessWith(t, HarnessOptions{URL: testURL, AdapterID: id, SupportedFilters: filters})
	})
}
