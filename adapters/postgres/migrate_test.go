package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestCreatedAtMigration opens a schema written by the previous version (5, created_at a
// timestamptz) and reads its items back through storetest.CheckMigrated: each created_at is
// exactly the double a client read from the wire before the upgrade.
func TestCreatedAtMigration(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	name, q := oldSchema(t, h, "_v5", 5)
	var old []memory.Item
	for i, us := range storetest.LegacyMicros {
		it := storetest.LegacyItem(i, us)
		p, err := relstore.Prepare(it, relstore.Rules{RejectNUL: true})
		if err != nil {
			t.Fatal(err)
		}
		// The previous build's row: created_at a timestamptz of whole microseconds.
		if _, err := h.admin.Exec(ctx, `INSERT INTO `+q+`.memory_items
			(scope, id, created_at, metadata, content, search_text, tags, metadata_text, content_text)
			VALUES ('s', $1, timestamptz 'epoch' + $2 * interval '1 microsecond', $3, $4, $5, $6, $7, $8)`,
			p.ID, us, string(p.Metadata), string(p.Content), p.SearchText, p.Tags, string(p.Metadata), string(p.Content)); err != nil {
			t.Fatal(err)
		}
		old = append(old, it)
	}
	s, err := Open(ctx, Options{URL: testURL, Schema: name, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	defer s.Close()
	storetest.CheckMigrated(t, s, old)
}

// oldSchema creates the schema h.Schema()+suffix at the given schema version, as a
// previous build left it, and drops it when t ends. It returns its name and quoted name.
func oldSchema(t *testing.T, h *Harness, suffix string, version int) (string, string) {
	t.Helper()
	ctx := context.Background()
	name := h.Schema() + suffix
	q := pgx.Identifier{name}.Sanitize()
	t.Cleanup(func() { _, _ = h.admin.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+q+` CASCADE`) })
	old := schemaOf(name)
	old.Migrations = old.Migrations[:version+1]
	err := pgx.BeginFunc(ctx, h.admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+q); err != nil {
			return err
		}
		return old.Migrate(ctx, pgConn{tx})
	})
	if err != nil {
		t.Fatalf("migrate to version %d: %v", version, err)
	}
	return name, q
}
