package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// insertV1Row writes it the way builds before schema version 4 did, with created_at as us
// integer Unix microseconds in created_at_us.
func insertV1Row(t *testing.T, db *sql.DB, scope string, it memory.Item, us int64) {
	t.Helper()
	it.CreatedAt = 0
	p, err := relstore.Prepare(it, relstore.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	tags, _ := json.Marshal(p.Tags)
	if _, err := db.Exec(`INSERT INTO memory_items
		(scope, id, kind, created_at_us, metadata, content, search_text, tags)
		VALUES (?, ?, 'memory_item', ?, ?, ?, ?, ?)`,
		scope, p.ID.String(), us, string(p.Metadata), string(p.Content), p.SearchText, string(tags)); err != nil {
		t.Fatalf("insert a version-1 row: %v", err)
	}
}

// TestCreatedAtMigration opens a file written by the previous schema (version 3, integer
// microseconds) and reads its items back through storetest.CheckMigrated: each created_at is
// exactly the double a client read from the wire before the upgrade.
func TestCreatedAtMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	raw, err := sql.Open("sqlite", dsn(path, "rwc", DefaultRequestTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	v3 := schema
	v3.Migrations = schema.Migrations[:4]
	if err := v3.Migrate(ctx, conn{raw}); err != nil {
		t.Fatalf("migrate to version 3: %v", err)
	}
	var old []memory.Item
	for i, us := range storetest.LegacyMicros {
		it := storetest.LegacyItem(i, us)
		insertV1Row(t, raw, "s", it, us)
		old = append(old, it)
	}
	s, err := Open(ctx, Options{Path: path, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	defer s.Close()
	var version int
	if err := raw.QueryRow(`SELECT max(version) FROM mao_schema_migrations`).Scan(&version); err != nil || version != SchemaVersion {
		t.Fatalf("schema version after Open: %d (%v), want %d", version, err, SchemaVersion)
	}
	storetest.CheckMigrated(t, s, old)
}
