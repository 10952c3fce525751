package postgres

import (
	"context"
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
