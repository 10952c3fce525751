package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

func newHarness(t *testing.T) *Harness {
	t.Helper()
	return newHarnessWith(t, HarnessOptions{Dir: t.TempDir()})
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
		return Open(context.Background(), Options{Path: h.Path(), Scope: h.Scope(), MaxItemBytes: n})
	})
}

// TestWrongKindAndScopeIsolation: a record of another kind is invisible and not overwritten;
// another scope in the same file sees nothing of this one.
func TestWrongKindAndScopeIsolation(t *testing.T) {
	h := newHarness(t)
	storetest.WrongKindAndScopeIsolation(t, h, func(t *testing.T, scope string) memory.Store {
		other, err := Open(context.Background(), Options{Path: h.Path(), Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = other.Close() })
		return other
	})
}

// TestRejectedWriteByService: a write SQLite's own trigger aborts is a MemoryAdapterError.
func TestRejectedWriteByService(t *testing.T) { storetest.RejectedWriteByService(t, newHarness(t)) }

// TestOutageAndRecovery: with the database file moved away every call, and opening a new
// store, is unavailable; restoring the file restores the same adapter instance, data intact.
func TestOutageAndRecovery(t *testing.T) {
	h := newHarness(t)
	storetest.OutageAndRecovery(t, h, storetest.Outage{Restore: h.restoreForTest, MakeStoreFails: true})
}

func (h *Harness) restoreForTest() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.restoreLocked()
}

// TestClosedStore: Close is idempotent and a closed store is unavailable.
func TestClosedStore(t *testing.T) {
	h := newHarness(t)
	storetest.ClosedStore(t, func(t *testing.T) storetest.ClosableStore {
		s, err := Open(context.Background(), Options{Path: h.Path(), Scope: h.Scope()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
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

// TestProbe: the probe reports the harness's SQLite version and three passing checks.
func TestProbe(t *testing.T) { storetest.Probe(t, newHarness(t), 4) }

// TestConcurrentProbes: overlapping probes of one database file.
func TestConcurrentProbes(t *testing.T) { storetest.ConcurrentProbes(t, newHarness(t)) }

// TestConcurrentWritersLoseNothing stores from many goroutines over two store instances
// while others search, then checks every acknowledged write is retrievable and searchable.
// The test is about lost writes, not latency: on a loaded machine under -race, writers that
// queue on SQLite's single write lock can wait longer than the 5 s production deadline, so
// the harness gives each call two minutes (and the busy timeout follows it).
func TestConcurrentWritersLoseNothing(t *testing.T) {
	storetest.ConcurrentWritersLoseNothing(t, func(t *testing.T) storetest.Harness {
		return newHarnessWith(t, HarnessOptions{Dir: t.TempDir(), RequestTimeout: 2 * time.Minute})
	}, 40)
}

// TestHarnessAdapterID: the harness's adapter id and filter set reach the store's manifest.
func TestHarnessAdapterID(t *testing.T) {
	storetest.HarnessAdapterID(t, "sqlite-team-a", func(t *testing.T, id string, filters []string) storetest.Harness {
		return newHarnessWith(t, HarnessOptions{Dir: t.TempDir(), AdapterID: id, SupportedFilters: filters})
	})
}

// TestHostileData replays the SQLite report: metadata nested 1,000 levels used to be stored and
// then failed every filtered search of the scope in json_each.
func TestHostileData(t *testing.T) { storetest.HostileData(t, factory, storetest.HostileOptions{}) }

// TestLegacyDeepRowDoesNotPoisonFilters plants a row as an older build could write it, with
// metadata nested 1,000 levels (beyond SQLite's JSON parser), and checks that filtered search
// of the scope still answers: the row matches no filter and is still retrievable by id.
func TestLegacyDeepRowDoesNotPoisonFilters(t *testing.T) {
	h := newHarness(t)
	s := storetest.Open(t, h)
	ok := memory.NewItem(json.RawMessage(`"fine"`))
	ok.Metadata["branch_id"] = json.RawMessage(`"b1"`)
	storetest.MustStore(t, s, ok)
	deep := memory.NewItem(json.RawMessage(`"legacy"`))
	meta := `{"branch_id":"b1","source":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`
	if _, err := h.admin.ExecContext(storetest.Ctx(t), `INSERT INTO memory_items
		(scope, id, kind, created_at, metadata, content, search_text, tags)
		VALUES (?, ?, 'memory_item', '0.0', ?, '"legacy"', 'legacy', '[]')`, h.Scope(), deep.ID.String(), meta); err != nil {
		t.Fatalf("plant legacy row: %v", err)
	}
	for _, f := range []string{`"b1"`, `{"a":1}`, `7`} {
		hits, err := s.Search(storetest.Ctx(t), memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(f)}, Limit: 10})
		if err != nil {
			t.Fatalf("filter %s after a legacy deep row: %v", f, err)
		}
		if f == `"b1"` && !slices.Equal(storetest.IDs(hits), []uuid.UUID{ok.ID}) {
			t.Fatalf("filter %s: got %v, want only %v", f, storetest.IDs(hits), ok.ID)
		}
	}
	if got, err := s.Retrieve(storetest.Ctx(t), deep.ID); err != nil || got == nil {
		t.Fatalf("legacy row by id: %v, %v", got, err)
	}
}

// TestSubScopes: views of other scopes on the same file hold their own rows
// (storetest.SubScopes).
func TestSubScopes(t *testing.T) {
	h := newHarness(t)
	s := storetest.Open(t, h).(*Store)
	storetest.SubScopes(t, s, s.Scope())
}

// TestRetention runs the shared retention and usage suite (issue 46) on a real file.
func TestRetention(t *testing.T) {
	storetest.Retention(t, func(t *testing.T, clock func() time.Time) storetest.Harness {
		return newHarnessWith(t, HarnessOptions{Dir: t.TempDir(), Now: clock})
	})
}

// TestRetentionSweepReadsOnlyTheIndexRange: the sweep's selection seeks the retention
// index by scope and store time and needs no sort, so at a million items it reads the rows
// it deletes and no others; the usage count reads the index alone.
func TestRetentionSweepReadsOnlyTheIndexRange(t *testing.T) {
	h := newHarness(t)
	_ = storetest.Open(t, h)
	plan := func(query string, args ...any) string {
		rows, err := h.admin.Query(`EXPLAIN QUERY PLAN `+query, args...)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return strings.Join(out, "; ")
	}
	for _, tc := range []struct {
		query string
		args  []any
		want  string
	}{
		{oldestSQL(true), []any{"s", 1, 10}, "SEARCH memory_items USING COVERING INDEX memory_items_retention (scope=? AND stored_at_us<?)"},
		{oldestSQL(false), []any{"s", 10}, "SEARCH memory_items USING COVERING INDEX memory_items_retention (scope=?)"},
		{`SELECT count(*), coalesce(sum(size_bytes), 0) FROM memory_items INDEXED BY memory_items_retention WHERE scope = ? AND kind = 'memory_item'`,
			[]any{"s"}, "SEARCH memory_items USING COVERING INDEX memory_items_retention (scope=?)"},
	} {
		got := plan(tc.query, tc.args...)
		if got != tc.want {
			t.Errorf("plan of %s:\n got %s\nwant %s", tc.query, got, tc.want)
		}
	}
}

// TestStoreWaitsForASweepBatch: a store behind a sweep batch (the whole sweep gate held)
// waits for it, and one that cannot get in within its busy timeout fails as unavailable,
// having written nothing; once the batch ends, stores go through.
func TestStoreWaitsForASweepBatch(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "gate.db"), Scope: "gate", RequestTimeout: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.sweepGate.Acquire(ctx, sweepGateSize); err != nil {
		t.Fatal(err)
	}
	refused := memory.NewItem(json.RawMessage(`{"n":1}`))
	if _, err := s.Store(ctx, refused); !errors.Is(err, memory.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("store behind a sweep batch: got %v, want unavailable after the busy timeout", err)
	}
	// The refusal above needs a short timeout; the store that waits must not race one on a
	// loaded machine (under -race a WAL commit alone can take a quarter second), so it gets
	// the default. Set before the store starts, so no goroutine reads it while it changes.
	s.timeout = DefaultRequestTimeout
	done := make(chan error, 1)
	waiting := memory.NewItem(json.RawMessage(`{"n":2}`))
	go func() {
		_, err := s.Store(ctx, waiting)
		done <- err
	}()
	// While the batch holds the gate the store cannot finish, however long it is given.
	select {
	case err := <-done:
		t.Fatalf("store finished while a sweep batch held the gate: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	s.sweepGate.Release(sweepGateSize)
	if err := <-done; err != nil {
		t.Fatalf("store after the batch: %v", err)
	}
	for _, c := range []struct {
		it   memory.Item
		want bool
	}{{refused, false}, {waiting, true}} {
		got, err := s.Retrieve(ctx, c.it.ID)
		if err != nil || (got != nil) != c.want {
			t.Errorf("retrieve %s: got %v, %v; want stored %v", c.it.ID, got, err, c.want)
		}
	}
}
