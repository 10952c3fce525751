package postgres

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestTextIndexMatchesReference: storetest.TextIndex over the text index (migration 7).
func TestTextIndexMatchesReference(t *testing.T) {
	h := newHarness(t)
	s := newStore(t, h)
	storetest.TextIndex(t, s, storetest.TextIndexHooks{
		Candidates: func(ctx context.Context, needle string) (int, error) {
			seqs, err := s.textCandidates(ctx, s.pool, ptr(needle))
			if seqs == nil {
				return -1, err
			}
			return len(seqs), err
		},
		CheckRows: func(t *testing.T, live []memory.Item) { checkIndexRows(t, h, live) },
		Delete: func(ctx context.Context, id uuid.UUID) error {
			_, err := h.admin.Exec(ctx, `DELETE FROM `+s.table+` WHERE scope = $1 AND id = $2`, s.scope, id)
			return err
		},
	})
}

// checkIndexRows: the text index holds exactly the grams textGrams computes for the live
// rows whose text fits the index, each under its row's seq.
func checkIndexRows(t *testing.T, h *Harness, live []memory.Item) {
	t.Helper()
	ctx := context.Background()
	want := 0
	for _, it := range live {
		want += len(relstore.TextGrams(memory.SearchText(it.Content)))
	}
	var got, orphans int
	if err := h.admin.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM `+h.table()+` AS m
		WHERE m.scope = x.scope AND m.seq = x.seq AND x.gram IN (SELECT `+pgx.Identifier{h.schema}.Sanitize()+`.memory_item_text_grams(m.search_text))))
		FROM `+pgx.Identifier{h.schema, "memory_item_text"}.Sanitize()+` AS x`).Scan(&got, &orphans); err != nil {
		t.Fatal(err)
	}
	if got != want || orphans != 0 {
		t.Errorf("text index: %d entries (%d not of a live row's text), want %d", got, orphans, want)
	}
}

// TestTextIndexBackfill: a schema at version 6 with rows written by the previous version is
// migrated to the text index (migration 7) and backfilled: every search equals
// memory.Matches, through the index for the needles it answers.
func TestTextIndexBackfill(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	name, q := oldSchema(t, h, "_text", 6)
	old, prepared, err := relstore.TextIndexItems(relstore.Rules{RejectNUL: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prepared {
		// The previous build's statement (its Store), run before the migration.
		if _, err := h.admin.Exec(ctx, `INSERT INTO `+q+`.memory_items
			(scope, id, kind, created_at, metadata, content, search_text, tags, metadata_text, content_text)
			VALUES ('s', $1, 'memory_item', $2, $3::jsonb, $4::jsonb, $5, $6, $7::text, $8::text)`,
			p.ID, p.CreatedAt, string(p.Metadata), string(p.Content), p.SearchText, p.Tags,
			string(p.Metadata), string(p.Content)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, Options{URL: testURL, Schema: name, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	defer s.Close()
	storetest.TextMatchesReference(t, s, old, relstore.TextIndexNeedles())
	seqs, err := s.textCandidates(ctx, s.pool, ptr("item 4242 lorem"))
	if want := 1 + relstore.LongTexts(old); err != nil || len(seqs) != want {
		t.Errorf("text index probe after the backfill: %v, %v; want %d candidates", seqs, err, want)
	}
	var entries int
	if err := h.admin.QueryRow(ctx, `SELECT count(*) FROM `+q+`.memory_item_text`).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, it := range old {
		want += len(relstore.TextGrams(memory.SearchText(it.Content)))
	}
	if entries != want {
		t.Errorf("text index after the backfill: %d entries, want %d", entries, want)
	}
}
