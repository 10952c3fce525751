package sqlite

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestTagIndexBackfillAndUpkeep: a file at schema version 1 with rows is migrated to the tag
// and text indexes and backfilled, then the triggers keep them in step with a replacement
// and a delete, and tag and text searches find exactly the items that match now.
func TestTagIndexBackfillAndUpkeep(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite", dsn(path, "rwc", DefaultRequestTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	v1 := schema
	v1.Migrations = schema.Migrations[:2]
	if err := v1.Migrate(ctx, conn{raw}); err != nil {
		t.Fatalf("migrate to version 1: %v", err)
	}
	old := []memory.Item{
		memory.NewItem([]byte(`"Alpha"`), "x", "rare"),
		memory.NewItem([]byte(`"bravo"`), "x"),
		memory.NewItem([]byte(`"charlie"`), "y", "y"),
	}
	for _, it := range old {
		insertV1Row(t, raw, "s", it, int64(math.Round(it.CreatedAt*1e6)))
	}
	s, err := Open(ctx, Options{Path: path, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	defer s.Close()
	search := func(tags ...string) []uuid.UUID {
		t.Helper()
		hits, err := s.Search(ctx, memory.Query{Tags: tags, Limit: 10})
		if err != nil {
			t.Fatalf("Search(%q): %v", tags, err)
		}
		return storetest.IDs(hits)
	}
	text := func(want []uuid.UUID, needle string) {
		t.Helper()
		hits, err := s.Search(ctx, memory.Query{Text: &needle, Limit: 10})
		if err != nil {
			t.Fatalf("Search(%q): %v", needle, err)
		}
		if got := storetest.IDs(hits); !slices.Equal(got, want) {
			t.Errorf("text %q: got %v, want %v", needle, got, want)
		}
	}
	check := func(want []uuid.UUID, tags ...string) {
		t.Helper()
		if got := search(tags...); !slices.Equal(got, want) {
			t.Errorf("tags %q: got %v, want %v", tags, got, want)
		}
	}
	check([]uuid.UUID{old[0].ID}, "rare")
	check([]uuid.UUID{old[0].ID, old[1].ID}, "x")
	check([]uuid.UUID{old[2].ID}, "y")
	text([]uuid.UUID{old[0].ID}, "ALPH")
	text([]uuid.UUID{old[2].ID}, "harl")
	text(nil, "zulu")
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM memory_item_tags`).Scan(&n); err != nil || n != 4 {
		t.Errorf("tag index rows after the backfill: %d (%v), want 4 (a repeated tag is one)", n, err)
	}
	// A replacement moves the tags, a delete removes them.
	moved := old[0]
	moved.Tags = []string{"y"}
	moved.Content = []byte(`"delta"`)
	if _, err := s.Store(ctx, moved); err != nil {
		t.Fatal(err)
	}
	check(nil, "rare")
	check([]uuid.UUID{old[1].ID}, "x")
	check([]uuid.UUID{old[0].ID, old[2].ID}, "y")
	text(nil, "alpha")
	text([]uuid.UUID{old[0].ID}, "elt")
	if _, err := raw.ExecContext(ctx, `DELETE FROM memory_items WHERE id = ?`, old[2].ID.String()); err != nil {
		t.Fatal(err)
	}
	check([]uuid.UUID{old[0].ID}, "y")
	text(nil, "harl")
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM memory_item_tags`).Scan(&n); err != nil || n != 2 {
		t.Errorf("tag index rows after a replacement and a delete: %d (%v), want 2", n, err)
	}
}
