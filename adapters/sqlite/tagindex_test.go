package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestTagIndexBackfillAndUpkeep: a file at schema version 1 with rows is migrated to the tag
// index and backfilled, then the triggers keep the index in step with a replacement and a
// delete, and a tag search finds exactly the items that have the tag now.
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
		memory.NewItem([]byte(`"a"`), "x", "rare"),
		memory.NewItem([]byte(`"b"`), "x"),
		memory.NewItem([]byte(`"c"`), "y", "y"),
	}
	for _, it := range old {
		p, err := relstore.Prepare(it, relstore.Rules{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.ExecContext(ctx, insertRow, rowArgs("s", p)...); err != nil {
			t.Fatal(err)
		}
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
	check := func(want []uuid.UUID, tags ...string) {
		t.Helper()
		if got := search(tags...); !slices.Equal(got, want) {
			t.Errorf("tags %q: got %v, want %v", tags, got, want)
		}
	}
	check([]uuid.UUID{old[0].ID}, "rare")
	check([]uuid.UUID{old[0].ID, old[1].ID}, "x")
	check([]uuid.UUID{old[2].ID}, "y")
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM memory_item_tags`).Scan(&n); err != nil || n != 4 {
		t.Errorf("tag index rows after the backfill: %d (%v), want 4 (a repeated tag is one)", n, err)
	}
	// A replacement moves the tags, a delete removes them.
	moved := old[0]
	moved.Tags = []string{"y"}
	if _, err := s.Store(ctx, moved); err != nil {
		t.Fatal(err)
	}
	check(nil, "rare")
	check([]uuid.UUID{old[1].ID}, "x")
	check([]uuid.UUID{old[0].ID, old[2].ID}, "y")
	if _, err := raw.ExecContext(ctx, `DELETE FROM memory_items WHERE id = ?`, old[2].ID.String()); err != nil {
		t.Fatal(err)
	}
	check([]uuid.UUID{old[0].ID}, "y")
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM memory_item_tags`).Scan(&n); err != nil || n != 2 {
		t.Errorf("tag index rows after a replacement and a delete: %d (%v), want 2", n, err)
	}
}
