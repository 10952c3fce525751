package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// ClockFactory returns a fresh harness over an empty scope, with the filter keys a Factory's
// has, whose stores stamp every write with clock (the store time retention ages from).
type ClockFactory func(t *testing.T, clock func() time.Time) Harness

// Clock is a settable clock for ClockFactory; its zero value reads the zero time.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// retentionEpoch is the clock's start in the retention cases: any fixed instant works, and a
// fixed one makes a failure reproducible.
var retentionEpoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// Retention is the shared retention and usage suite (issue 46): an item is removed by the
// first sweep at or after MaxAge since its store time and never before, whatever its
// client-supplied created_at; an overwrite restarts its age; MaxItems keeps the newest; a
// removed item is gone from retrieve and from text, tag and filter search; Usage counts
// items and memory.ItemSize bytes through writes, overwrites and sweeps.
func Retention(t *testing.T, f ClockFactory) {
	t.Run("max-age-removes-expired-never-fresh", func(t *testing.T) { retentionMaxAge(t, f) })
	t.Run("max-items-keeps-newest", func(t *testing.T) { retentionMaxItems(t, f) })
	t.Run("usage-counts-items-and-bytes", func(t *testing.T) { retentionUsage(t, f) })
}

// clocked opens a store from f's harness on a clock set to retentionEpoch and returns its
// Sweeper and UsageReporter, or fails the test.
func clocked(t *testing.T, f ClockFactory) (*Clock, Harness, memory.ExternalStore, memory.Sweeper, memory.UsageReporter) {
	t.Helper()
	clock := &Clock{}
	clock.Set(retentionEpoch)
	h := f(t, clock.Now)
	s := Open(t, h)
	sw, ok := s.(memory.Sweeper)
	if !ok {
		t.Fatalf("%T does not implement memory.Sweeper", s)
	}
	u, ok := s.(memory.UsageReporter)
	if !ok {
		t.Fatalf("%T does not implement memory.UsageReporter", s)
	}
	return clock, h, s, sw, u
}

// retentionItem is an item every predicate of the cases finds: text "keep-or-sweep", tag
// "retained", branch_id "r".
func retentionItem(n int, createdAt float64) memory.Item {
	return memory.Item{
		ID:        uuid.New(),
		CreatedAt: createdAt,
		Content:   json.RawMessage(fmt.Sprintf(`{"text":"keep-or-sweep %d"}`, n)),
		Metadata:  map[string]json.RawMessage{"branch_id": json.RawMessage(`"r"`)},
		Tags:      []string{"retained"},
	}
}

// retentionQueries are a text, a tag and a filter search that each find every
// retentionItem.
var retentionQueries = []memory.Query{
	{Text: Text("keep-or-sweep"), Limit: 50},
	{Tags: []string{"retained"}, Limit: 50},
	{Filters: map[string]json.RawMessage{"branch_id": json.RawMessage(`"r"`)}, Limit: 50},
}

// checkSurvivors fails unless exactly want (in any order) are retrievable and found by
// each retention query, and gone lists none of them.
func checkSurvivors(t *testing.T, h Harness, s memory.Store, want, gone []uuid.UUID) {
	t.Helper()
	Visible(t, h)
	for _, id := range gone {
		got, err := s.Retrieve(Ctx(t), id)
		if err != nil {
			t.Fatalf("Retrieve(%v): %v", id, err)
		}
		if got != nil {
			t.Errorf("Retrieve(%v) found an item retention removed", id)
		}
	}
	for _, id := range want {
		MustRetrieve(t, s, id)
	}
	sorted := slices.Clone(want)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	for _, q := range retentionQueries {
		hits, err := s.Search(Ctx(t), q)
		if err != nil {
			t.Fatalf("Search(%+v): %v", q, err)
		}
		ids := IDs(hits)
		slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		if !slices.Equal(ids, sorted) {
			t.Errorf("Search(text %v, tags %v, filters %d) = %v, want %v", q.Text != nil, q.Tags, len(q.Filters), ids, sorted)
		}
	}
}

func mustSweep(t *testing.T, sw memory.Sweeper, p memory.RetentionPolicy, now time.Time, want int64) {
	t.Helper()
	n, err := sw.Sweep(Ctx(t), p, now)
	if err != nil {
		t.Fatalf("Sweep(%+v, %v): %v", p, now, err)
	}
	if n != want {
		t.Fatalf("Sweep(%+v, at +%v) removed %d items, want %d", p, now.Sub(retentionEpoch), n, want)
	}
}

func retentionMaxAge(t *testing.T, f ClockFactory) {
	clock, h, s, sw, _ := clocked(t, f)
	p := memory.RetentionPolicy{MaxAge: time.Hour}
	// A claims to be from 2100 and B from 1970: neither hides from retention nor hastens
	// its removal, which counts from the store time alone.
	a := retentionItem(1, 4102444800)
	MustStore(t, s, a)
	clock.Set(retentionEpoch.Add(30 * time.Minute))
	b := retentionItem(2, 0)
	MustStore(t, s, b)
	c := retentionItem(3, 0)
	MustStore(t, s, c)

	// One microsecond before A's hour: nothing is old enough.
	mustSweep(t, sw, p, retentionEpoch.Add(time.Hour-time.Microsecond), 0)
	checkSurvivors(t, h, s, []uuid.UUID{a.ID, b.ID, c.ID}, nil)

	// C is stored again at +1h: its age restarts.
	clock.Set(retentionEpoch.Add(time.Hour))
	MustStore(t, s, c)
	mustSweep(t, sw, p, retentionEpoch.Add(time.Hour), 1)
	checkSurvivors(t, h, s, []uuid.UUID{b.ID, c.ID}, []uuid.UUID{a.ID})

	mustSweep(t, sw, p, retentionEpoch.Add(90*time.Minute), 1)
	checkSurvivors(t, h, s, []uuid.UUID{c.ID}, []uuid.UUID{a.ID, b.ID})
	mustSweep(t, sw, p, retentionEpoch.Add(2*time.Hour), 1)
	checkSurvivors(t, h, s, nil, []uuid.UUID{a.ID, b.ID, c.ID})
	// A swept id can be stored again, and is then fresh.
	clock.Set(retentionEpoch.Add(3 * time.Hour))
	MustStore(t, s, a)
	mustSweep(t, sw, p, retentionEpoch.Add(3*time.Hour+time.Minute), 0)
	checkSurvivors(t, h, s, []uuid.UUID{a.ID}, nil)
}

func retentionMaxItems(t *testing.T, f ClockFactory) {
	clock, h, s, sw, _ := clocked(t, f)
	var all []uuid.UUID
	for i := range 7 {
		clock.Set(retentionEpoch.Add(time.Duration(i) * time.Second))
		// created_at runs backwards, so a sweep by created_at would keep the wrong ones.
		it := retentionItem(i, float64(2000000000-i))
		MustStore(t, s, it)
		all = append(all, it.ID)
	}
	// The oldest is stored again last: it is now the newest.
	clock.Set(retentionEpoch.Add(time.Minute))
	again := retentionItem(0, 1)
	again.ID = all[0]
	MustStore(t, s, again)
	mustSweep(t, sw, memory.RetentionPolicy{MaxItems: 7}, retentionEpoch.Add(time.Hour), 0)
	mustSweep(t, sw, memory.RetentionPolicy{MaxItems: 4}, retentionEpoch.Add(time.Hour), 3)
	checkSurvivors(t, h, s, []uuid.UUID{all[0], all[4], all[5], all[6]}, all[1:4])
	// Both limits at once: age removes the restamped item's elders first.
	mustSweep(t, sw, memory.RetentionPolicy{MaxAge: time.Hour, MaxItems: 1}, retentionEpoch.Add(time.Hour+5*time.Second), 3)
	checkSurvivors(t, h, s, []uuid.UUID{all[0]}, all[1:])
}

func retentionUsage(t *testing.T, f ClockFactory) {
	clock, _, s, sw, ur := clocked(t, f)
	usage := func(want memory.Usage) {
		t.Helper()
		got, err := ur.Usage(Ctx(t))
		if err != nil {
			t.Fatalf("Usage: %v", err)
		}
		if got != want {
			t.Fatalf("Usage = %+v, want %+v", got, want)
		}
	}
	usage(memory.Usage{})
	a, b := retentionItem(1, 1), retentionItem(2, 2)
	MustStore(t, s, a)
	MustStore(t, s, b)
	usage(memory.Usage{Items: 2, Bytes: memory.ItemSize(a) + memory.ItemSize(b)})
	// An overwrite is counted once, at its new size.
	bigger := a
	bigger.Content = json.RawMessage(`{"text":"keep-or-sweep, now a good deal longer than before"}`)
	bigger.Tags = []string{"retained", "grown"}
	clock.Set(retentionEpoch.Add(time.Minute))
	MustStore(t, s, bigger)
	usage(memory.Usage{Items: 2, Bytes: memory.ItemSize(bigger) + memory.ItemSize(b)})
	mustSweep(t, sw, memory.RetentionPolicy{MaxAge: time.Minute}, retentionEpoch.Add(time.Minute), 1)
	usage(memory.Usage{Items: 1, Bytes: memory.ItemSize(bigger)})
}
