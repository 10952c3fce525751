package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
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

func mustStore(t *testing.T, s memory.Store, it memory.Item) {
	t.Helper()
	id, err := s.Store(context.Background(), it)
	if err != nil {
		t.Fatalf("Store: %v", err)
	}
	if id != it.ID {
		t.Fatalf("Store returned %v, want %v", id, it.ID)
	}
}

func mustRetrieve(t *testing.T, s memory.Store, id uuid.UUID) memory.Item {
	t.Helper()
	got, err := s.Retrieve(context.Background(), id)
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	if got == nil {
		t.Fatalf("Retrieve(%v) = nil, want the stored item", id)
	}
	return *got
}

func ptr(s string) *string { return &s }

// TestExactnessFixtures covers contract.md §3: every fixture must round-trip through retrieve
// and search with Item.Equal, and the raw JSON text must keep the big integer's digits.
func TestExactnessFixtures(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	base := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	fixtures := []struct {
		name string
		item memory.Item
	}{
		{"integer-above-2^53", memory.Item{
			Content:  json.RawMessage(`{"n":12345678901234567890123,"m":9007199254740993}`),
			Metadata: map[string]json.RawMessage{"branch_id": json.RawMessage(`9007199254740993`)},
		}},
		{"reordered-keys", memory.Item{
			Content:  json.RawMessage(`{"b":1,"a":{"y":2,"x":1}}`),
			Metadata: map[string]json.RawMessage{"source": json.RawMessage(`{"z":1,"a":2}`)},
		}},
		{"tags-duplicates-in-order", memory.Item{
			Content: json.RawMessage(`"t"`),
			Tags:    []string{"b", "a", "b", "a", "a"},
		}},
		{"microsecond-timestamp", memory.Item{
			Content:   json.RawMessage(`"ts"`),
			CreatedAt: time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		}},
		{"u0000-in-json-string", memory.Item{
			Content:  json.RawMessage(`{"s":"a\u0000b"}`),
			Metadata: map[string]json.RawMessage{"source": json.RawMessage(`"x\u0000y"`)},
			Tags:     []string{"nul\x00tag"},
		}},
		{"float-and-exponent", memory.Item{
			Content: json.RawMessage(`[1.0, 1e400, -0, 0.1000000000000000055511151231257827]`),
		}},
		{"unicode", memory.Item{
			Content: json.RawMessage(`"Grüße, 世界 😀 \ud83d\ude00"`),
			Tags:    []string{"ß", "😀"},
		}},
	}
	for i, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			it := f.item
			it.ID = uuid.New()
			if it.CreatedAt.IsZero() {
				it.CreatedAt = base.Add(time.Duration(i) * time.Microsecond)
			}
			if it.Tags == nil {
				it.Tags = []string{}
			}
			mustStore(t, s, it)
			got := mustRetrieve(t, s, it.ID)
			if !got.Equal(it) {
				t.Fatalf("retrieve differs in %v:\n got %+v\nwant %+v", got.Diff(it), got, it)
			}
			hits, err := s.Search(context.Background(), memory.Query{Limit: 1000})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			idx := slices.IndexFunc(hits, func(h memory.Item) bool { return h.ID == it.ID })
			if idx < 0 {
				t.Fatalf("search did not return %v", it.ID)
			}
			if !hits[idx].Equal(it) {
				t.Fatalf("search hit differs in %v", hits[idx].Diff(it))
			}
		})
	}
	// The big integer's digits are kept verbatim, not through float64.
	var raw string
	if err := h.admin.QueryRow(`SELECT content FROM memory_items WHERE content LIKE '%12345678901234567890123%'`).Scan(&raw); err != nil {
		t.Fatalf("big integer digits not stored verbatim: %v", err)
	}
}

func TestLiteralTextSearch(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	texts := []string{"100% sure", "100 percent", "snake_case", "snakeXcase", "a*b", "aXXb", "Ünïcode CASE"}
	ids := map[string]uuid.UUID{}
	for _, tx := range texts {
		c, _ := json.Marshal(tx)
		it := memory.NewItem(c)
		ids[tx] = it.ID
		mustStore(t, s, it)
	}
	cases := []struct {
		needle string
		want   []string
	}{
		{"%", []string{"100% sure"}},
		{"0%", []string{"100% sure"}},
		{"_", []string{"snake_case"}},
		{"e_c", []string{"snake_case"}},
		{"*", []string{"a*b"}},
		{"a*b", []string{"a*b"}},
		{"ünïcode case", []string{"Ünïcode CASE"}},
		{"SNAKE", []string{"snake_case", "snakeXcase"}},
		{"nothing-like-this", nil},
	}
	for _, c := range cases {
		t.Run(c.needle, func(t *testing.T) {
			hits, err := s.Search(context.Background(), memory.Query{Text: ptr(c.needle), Limit: 100})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			var got []string
			for _, h := range hits {
				var str string
				_ = json.Unmarshal(h.Content, &str)
				got = append(got, str)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("text %q: got %q, want %q", c.needle, got, c.want)
			}
		})
	}
}

func TestSearchPredicatesAndOrder(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	mk := func(content string, meta map[string]string, tags ...string) memory.Item {
		it := memory.NewItem(json.RawMessage(content), tags...)
		for k, v := range meta {
			it.Metadata[k] = json.RawMessage(v)
		}
		mustStore(t, s, it)
		return it
	}
	a := mk(`"alpha"`, map[string]string{"source": `"web"`, "branch_id": `1`}, "x", "y")
	b := mk(`{"k":"Alpha"}`, map[string]string{"source": `"chat"`, "branch_id": `1.0`}, "y")
	c := mk(`"gamma"`, map[string]string{"source": `"web"`, "branch_id": `{"b":1,"a":2}`}, "z")
	d := mk(`"delta"`, map[string]string{"branch_id": `12345678901234567890123`}, "x")
	e := mk(`"eps"`, map[string]string{"branch_id": `12345678901234567890124`, "source": `null`})
	// Replacing an item keeps its position.
	a2 := a
	a2.Content = json.RawMessage(`"alpha replaced"`)
	mustStore(t, s, a2)

	ids := func(items []memory.Item) []uuid.UUID {
		out := []uuid.UUID{}
		for _, it := range items {
			out = append(out, it.ID)
		}
		return out
	}
	cases := []struct {
		name string
		q    memory.Query
		want []uuid.UUID
	}{
		{"all in insertion order", memory.Query{Limit: 10}, []uuid.UUID{a.ID, b.ID, c.ID, d.ID, e.ID}},
		{"limit", memory.Query{Limit: 2}, []uuid.UUID{a.ID, b.ID}},
		{"text in JSON object", memory.Query{Text: ptr("alpha"), Limit: 10}, []uuid.UUID{a.ID, b.ID}},
		{"JSON punctuation is text", memory.Query{Text: ptr(`{"k":`), Limit: 10}, []uuid.UUID{b.ID}},
		{"any tag", memory.Query{Tags: []string{"z", "x"}, Limit: 10}, []uuid.UUID{a.ID, c.ID, d.ID}},
		{"string filter", memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(`"web"`)}, Limit: 10}, []uuid.UUID{a.ID, c.ID}},
		{"number filter by value", memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`1`)}, Limit: 10}, []uuid.UUID{a.ID, b.ID}},
		{"number filter limit in Go", memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`1e0`)}, Limit: 1}, []uuid.UUID{a.ID}},
		{"big integer filter exact", memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`12345678901234567890124`)}, Limit: 10}, []uuid.UUID{e.ID}},
		{"object filter reordered", memory.Query{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`{"a":2,"b":1}`)}, Limit: 10}, []uuid.UUID{c.ID}},
		{"null filter", memory.Query{Filters: map[string]json.RawMessage{"source": json.RawMessage(`null`)}, Limit: 10}, []uuid.UUID{e.ID}},
		{"conjunction", memory.Query{Text: ptr("a"), Tags: []string{"y"}, Filters: map[string]json.RawMessage{"source": json.RawMessage(`"chat"`)}, Limit: 10}, []uuid.UUID{b.ID}},
		{"zero limit", memory.Query{Limit: 0}, []uuid.UUID{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits, err := s.Search(context.Background(), c.q)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if got := ids(hits); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	got := mustRetrieve(t, s, a.ID)
	if !got.Equal(a2) {
		t.Fatalf("replaced item differs in %v", got.Diff(a2))
	}
}

func TestRejectsBeforeIO(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	_, err := s.Search(context.Background(), memory.Query{Filters: map[string]json.RawMessage{"zeta": json.RawMessage(`1`), "alpha": json.RawMessage(`1`)}, Limit: -1})
	var uq *memory.UnsupportedMemoryQuery
	if !errors.As(err, &uq) || !slices.Equal(uq.RejectedKeys, []string{"alpha", "limit", "zeta"}) {
		t.Fatalf("Search with bad keys: got %v, want UnsupportedMemoryQuery [alpha limit zeta]", err)
	}
	bad := []memory.Item{
		{ID: uuid.Nil, Content: json.RawMessage(`1`)},
		{ID: uuid.New(), Content: json.RawMessage(`{"a":`)},
		{ID: uuid.New(), Content: json.RawMessage("\"\xff\"")},
		{ID: uuid.New(), Metadata: map[string]json.RawMessage{"k": json.RawMessage(`nope`)}},
		{ID: uuid.New(), Tags: []string{"\xff"}},
	}
	for i, it := range bad {
		if _, err := s.Store(context.Background(), it); !errors.Is(err, memory.ErrAdapter) || errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("bad item %d: got %v, want MemoryAdapterError", i, err)
		}
		if got, err := s.Retrieve(context.Background(), it.ID); err != nil || got != nil {
			t.Errorf("bad item %d was written: %v, %v", i, got, err)
		}
	}
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

// TestConcurrentWritersLoseNothing stores N items from many goroutines while others search,
// then checks every acknowledged write is retrievable and searchable.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	const writers, perWriter = 8, 40
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []uuid.UUID
		errs  = make(chan error, writers*perWriter+writers)
		stop  = make(chan struct{})
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				it := memory.NewItem(json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)), "burst")
				id, err := s.Store(context.Background(), it)
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	var sg sync.WaitGroup
	for range 3 {
		sg.Add(1)
		go func() {
			defer sg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Search(context.Background(), memory.Query{Tags: []string{"burst"}, Text: ptr(`"w"`), Limit: 50}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	sg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call failed: %v", err)
	}
	if len(acked) != writers*perWriter {
		t.Fatalf("acknowledged %d writes, want %d", len(acked), writers*perWriter)
	}
	for _, id := range acked {
		mustRetrieve(t, s, id)
	}
	hits, err := s.Search(context.Background(), memory.Query{Tags: []string{"burst"}, Limit: 10 * writers * perWriter})
	if err != nil || len(hits) != writers*perWriter {
		t.Fatalf("search after burst: %d hits, %v; want %d", len(hits), err, writers*perWriter)
	}
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
