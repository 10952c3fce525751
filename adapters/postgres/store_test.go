package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
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

// TestSearchDifferential compares random searches, with rare and absent tags, filter values
// and text, against the reference semantics (memory.Matches) over random items, so the
// index probes in front of the search change no result.
func TestSearchDifferential(t *testing.T) {
	for _, seed := range []uint64{1, 20261204} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { storetest.Differential(t, factory, seed) })
	}
}

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
func TestProbe(t *testing.T) { storetest.Probe(t, newHarness(t), 5) }

// TestConcurrentProbes: the replicas of one adapter probe one server at once.
func TestConcurrentProbes(t *testing.T) { storetest.ConcurrentProbes(t, newHarness(t)) }

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

// TestHostileData replays the PostgreSQL report (1,000 copies of 1e131071 read back as 131 MB
// through jsonb) among the shared hostile fixtures; U+0000 is PostgreSQL's documented rejection.
func TestHostileData(t *testing.T) {
	storetest.HostileData(t, factory, storetest.HostileOptions{Rejects: []string{storetest.HostileNUL}})
}

// TestExactTextBesideJSONB checks migration 2's two read paths: a row written now reads back
// as the exact text it was given (1e131071 stays eight characters, where jsonb prints 131,072
// digits), and a row from schema version 1 (text columns NULL) still reads through jsonb.
func TestExactTextBesideJSONB(t *testing.T) {
	h := newHarness(t)
	s := storetest.Open(t, h)
	it := memory.NewItem(json.RawMessage(`[1e131071,1.50]`))
	it.Metadata["source"] = json.RawMessage(`1E+3`)
	storetest.MustStore(t, s, it)
	got := storetest.MustRetrieve(t, s, it.ID)
	if string(got.Content) != `[1e131071,1.50]` || string(got.Metadata["source"]) != `1E+3` {
		t.Fatalf("read back %s / %s, want the exact text written", got.Content, got.Metadata["source"])
	}
	hits, err := s.Search(storetest.Ctx(t), memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(`1000`)}, Limit: 5})
	if err != nil || len(hits) != 1 || string(hits[0].Content) != `[1e131071,1.50]` {
		t.Fatalf("filter on the jsonb column: %v, %v", storetest.IDs(hits), err)
	}
	small := memory.NewItem(json.RawMessage(`{"b":1e2,"a":"x"}`))
	storetest.MustStore(t, s, small)
	if _, err := h.admin.Exec(context.Background(), `UPDATE `+h.table()+` SET content_text = NULL, metadata_text = NULL WHERE id = $1`, small.ID); err != nil {
		t.Fatalf("make a version-1 row: %v", err)
	}
	old := storetest.MustRetrieve(t, s, small.ID)
	if !old.Equal(small) {
		t.Fatalf("version-1 row differs in %v", old.Diff(small))
	}
}

// TestSubScopes: views of other scopes on the same pool hold their own rows
// (storetest.SubScopes).
func TestSubScopes(t *testing.T) {
	s := newStore(t, newHarness(t))
	storetest.SubScopes(t, s, s.scope)
}

// TestRetention runs the shared retention and usage suite (issue 46) on the real server.
func TestRetention(t *testing.T) {
	storetest.Retention(t, func(t *testing.T, clock func() time.Time) storetest.Harness {
		return newHarnessWith(t, HarnessOptions{URL: testURL, Now: clock})
	})
}
