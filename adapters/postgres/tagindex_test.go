package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestTagIndexBackfillAndUpkeep: a schema at version 4 with rows is migrated to the tag
// index (migration 5) and backfilled, then the trigger keeps the index in step with a
// replacement and a delete, and a tag search finds exactly the items that have the tag now.
func TestTagIndexBackfillAndUpkeep(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	name, q := oldSchema(t, h, "_tags", 4)
	old := []memory.Item{
		memory.NewItem([]byte(`"a"`), "x", "rare"),
		memory.NewItem([]byte(`"b"`), "x"),
		memory.NewItem([]byte(`"c"`), "y", "y"),
	}
	for _, it := range old {
		p, err := relstore.Prepare(it, relstore.Rules{RejectNUL: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.admin.Exec(ctx, `INSERT INTO `+q+`.memory_items (scope, id, created_at, metadata, content, search_text, tags)
			VALUES ('s', $1, to_timestamp($2), $3, $4, $5, $6)`, p.ID, p.CreatedAt, string(p.Metadata), string(p.Content), p.SearchText, p.Tags); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, Options{URL: testURL, Schema: name, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	defer s.Close()
	check := func(want []uuid.UUID, tags ...string) {
		t.Helper()
		hits, err := s.Search(ctx, memory.Query{Tags: tags, Limit: 10})
		if err != nil {
			t.Fatalf("Search(%q): %v", tags, err)
		}
		if got := storetest.IDs(hits); !slices.Equal(got, want) {
			t.Errorf("tags %q: got %v, want %v", tags, got, want)
		}
	}
	count := func(want int, when string) {
		t.Helper()
		var n int
		if err := h.admin.QueryRow(ctx, `SELECT count(*) FROM `+q+`.memory_item_tags`).Scan(&n); err != nil || n != want {
			t.Errorf("tag index rows %s: %d (%v), want %d", when, n, err, want)
		}
	}
	check([]uuid.UUID{old[0].ID}, "rare")
	check([]uuid.UUID{old[0].ID, old[1].ID}, "x")
	check([]uuid.UUID{old[2].ID}, "y")
	check(nil, "absent")
	count(4, "after the backfill (a repeated tag is one)")
	moved := old[0]
	moved.Tags = []string{"y"}
	if _, err := s.Store(ctx, moved); err != nil {
		t.Fatal(err)
	}
	check(nil, "rare")
	check([]uuid.UUID{old[1].ID}, "x")
	check([]uuid.UUID{old[0].ID, old[2].ID}, "y")
	if _, err := h.admin.Exec(ctx, `DELETE FROM `+q+`.memory_items WHERE id = $1`, old[2].ID); err != nil {
		t.Fatal(err)
	}
	check([]uuid.UUID{old[0].ID}, "y")
	count(2, "after a replacement and a delete")
}

// TestCommonTagReadsItsPrefixThenWalks: a tag on more items than the probe reads is searched
// through its first relstore.TagProbeLimit entries (the prefix: every row up to the last of
// them has been named), then by a walk of the rows after them when those do not fill the
// limit. A filter whose only match lies past the prefix is still found, and a plain tag
// search answers the scope's first items with the tag in insertion order.
func TestCommonTagReadsItsPrefixThenWalks(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s := newStore(t, h)
	n := relstore.TagProbeLimit + 50
	items := make([]memory.Item, n)
	for i := range items {
		items[i] = memory.NewItem([]byte(`"x"`), "c")
		items[i].Metadata["source"] = []byte(`"early"`)
		if i%3 == 0 {
			items[i].Tags = append(items[i].Tags, "third")
		}
	}
	late := relstore.TagProbeLimit + 20
	items[late].Metadata["source"] = []byte(`"late"`)
	for _, it := range items {
		mustStore(t, s, it)
	}
	c, err := s.tagCandidates(ctx, s.pool, []string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.seqs) != relstore.TagProbeLimit || c.upTo != c.seqs[len(c.seqs)-1] {
		t.Fatalf("the probe of a tag on %d items gave %d candidates up to %d, want the first %d as a prefix", n, len(c.seqs), c.upTo, relstore.TagProbeLimit)
	}
	search := func(q memory.Query, want ...memory.Item) {
		t.Helper()
		hits, err := s.Search(ctx, q)
		if err != nil {
			t.Fatalf("Search(%+v): %v", q, err)
		}
		if got, w := storetest.IDs(hits), storetest.IDs(want); !slices.Equal(got, w) {
			t.Errorf("Search(%+v): %d hits %v, want %d %v", q, len(got), got, len(w), w)
		}
	}
	search(memory.Query{Tags: []string{"c"}, Limit: 20}, items[:20]...)
	search(memory.Query{Tags: []string{"c"}, Filters: map[string]json.RawMessage{"source": []byte(`"late"`)}, Limit: 20}, items[late])
	// Past the prefix: the limit takes rows from both sides of it.
	search(memory.Query{Tags: []string{"c"}, Filters: map[string]json.RawMessage{"source": []byte(`"early"`)}, Limit: 200}, items[:200]...)
	var tail []memory.Item
	for i, it := range items {
		if i >= relstore.TagProbeLimit-5 && i != late {
			tail = append(tail, it)
		}
	}
	all, err := s.Search(ctx, memory.Query{Tags: []string{"c"}, Filters: map[string]json.RawMessage{"source": []byte(`"early"`)}, Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := storetest.IDs(all[len(all)-len(tail):]), storetest.IDs(tail); len(all) != n-1 || !slices.Equal(got, want) {
		t.Errorf("a limit over the prefix: %d hits, want %d ending with the rows past the prefix in order", len(all), n-1)
	}
	// Two common tags are not a prefix of either: their search walks, as before.
	if c, err := s.tagCandidates(ctx, s.pool, []string{"c", "third"}); err != nil || c.seqs != nil {
		t.Errorf("two tags, one common: candidates %d (up to %d, %v), want none (a walk)", len(c.seqs), c.upTo, err)
	}
}
