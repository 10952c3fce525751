package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// textIndexTexts are contents whose needles start at every byte offset modulo
// textGramStride, span multi-byte characters, end their text, repeat, or lie beyond
// textIndexBytes (the rows the index leaves to its partial index).
func textIndexTexts() []string {
	texts := []string{
		"item 4242 lorem ipsum w42 dolor",
		"item 14242 lorem ipsum w42 dolor",
		"lorem ipsum item 7",
		"zebra crossing",
		"naïve café über straße",
		"日本語のテキストと絵文字🙂🙃を含む",
		"abababababababababab",
		"needle at the end: xyzzy-plugh",
		strings.Repeat("padding ", 300) + "deep needle qwerty",
		strings.Repeat("é", 1100) + " long multibyte tail",
	}
	for shift := range textGramStride + 1 {
		texts = append(texts, strings.Repeat("_", shift)+"shifted token marker")
	}
	return texts
}

// textIndexNeedles are absent, rare and common needles against textIndexTexts: short ones
// the index does not answer for, every trigram present but the needle absent, multi-byte,
// within and beyond textIndexBytes.
func textIndexNeedles() []string {
	return []string{
		"zebra", "item 4242 lorem", "item 42", "lorem item", "LOREM IPSUM", "orem ipsum w42 d",
		"café über", "über straße", "テキストと絵", "🙂🙃", "絵文字🙂", "ababab", "bababa",
		"xyzzy-plugh", "-plugh", "plugh!", "deep needle", "needle", "ng multibyte tail", "éééééé é",
		"token marker", "shifted", "_shifted", "__shifted token", "ed tok",
		"em ite", "w42 dolor", "ipsum w", "absent entirely", "ab", "é",
	}
}

// checkText compares each needle's search with memory.Matches over live (in storing order)
// at a limit that holds every hit and at limit 1.
func checkText(t *testing.T, s *Store, live []memory.Item, needles []string) {
	t.Helper()
	ctx := context.Background()
	for _, needle := range needles {
		for _, limit := range []int{1, 100} {
			q := memory.Query{Text: ptr(needle), Limit: limit}
			var want []uuid.UUID
			for _, it := range live {
				if len(want) < limit && memory.Matches(it, q, memory.Needle(needle)) {
					want = append(want, it.ID)
				}
			}
			hits, err := s.Search(ctx, q)
			if err != nil {
				t.Fatalf("Search(%q): %v", needle, err)
			}
			if got := storetest.IDs(hits); !slices.Equal(got, want) {
				t.Errorf("text %q limit %d: got %v, want %v (memory.Matches)", needle, limit, got, want)
			}
		}
	}
}

// TestTextIndexMatchesReference: searches answered through the text index (migration 7)
// equal memory.Matches for absent, rare and common needles, after stores, replacements
// that change and keep the text, and deletes; the probe is what answers (a rare needle
// gets candidates, an absent one none), and the index holds exactly the live rows' grams.
func TestTextIndexMatchesReference(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s := newStore(t, h)
	var live []memory.Item
	for i, text := range textIndexTexts() {
		c, err := json.Marshal(text)
		if err != nil {
			t.Fatal(err)
		}
		it := memory.NewItem(c, fmt.Sprintf("t%d", i%3))
		mustStore(t, s, it)
		live = append(live, it)
	}
	checkText(t, s, live, textIndexNeedles())
	// The probe answers: its grams' rows plus the rows too long for the index (the partial
	// index's), which is how "deep needle", beyond textIndexBytes, is found.
	for needle, want := range map[string]int{"item 4242 lorem": 1, "lorem item": 0, "deep needle": 0, "日本語のテ": 1} {
		seqs, err := s.textCandidates(ctx, s.pool, ptr(needle))
		if err != nil {
			t.Fatal(err)
		}
		if want += longTexts(live); seqs == nil || len(seqs) != want {
			t.Errorf("text index probe for %q: %v, want it to answer with %d candidate(s)", needle, seqs, want)
		}
	}
	checkIndexRows(t, h, live)

	// A replacement that changes the text, one that keeps it (the update trigger's WHEN
	// skips it), and a delete.
	live[0].Content = json.RawMessage(`"now about zebras"`)
	live[1].Tags = []string{"other"}
	for _, it := range live[:2] {
		mustStore(t, s, it)
	}
	if _, err := h.admin.Exec(ctx, `DELETE FROM `+s.table+` WHERE scope = $1 AND id = $2`, s.scope, live[2].ID); err != nil {
		t.Fatal(err)
	}
	live = slices.Delete(live, 2, 3)
	checkText(t, s, live, append(textIndexNeedles(), "now about", "about zebras"))
	checkIndexRows(t, h, live)

	// With tags too: the tag and text candidates are intersected.
	for _, q := range []memory.Query{
		{Text: ptr("lorem ipsum"), Tags: []string{"t1", "t2"}, Limit: 10},
		{Text: ptr("shifted token"), Tags: []string{"t0"}, Limit: 10},
		{Text: ptr("shifted token"), Tags: []string{"absent"}, Limit: 10},
	} {
		var want []uuid.UUID
		for _, it := range live {
			if memory.Matches(it, q, memory.Needle(*q.Text)) {
				want = append(want, it.ID)
			}
		}
		hits, err := s.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := storetest.IDs(hits); !slices.Equal(got, want) {
			t.Errorf("%+v: got %v, want %v", q, got, want)
		}
	}
}

// checkIndexRows: the text index holds exactly the grams textGrams computes for the live
// rows whose text fits the index, each under its row's seq.
func checkIndexRows(t *testing.T, h *Harness, live []memory.Item) {
	t.Helper()
	ctx := context.Background()
	want := 0
	for _, it := range live {
		want += len(textGrams(memory.SearchText(it.Content)))
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

// longTexts counts the items whose search text is too long for the text index.
func longTexts(items []memory.Item) int {
	n := 0
	for _, it := range items {
		if len(memory.SearchText(it.Content)) > textIndexBytes {
			n++
		}
	}
	return n
}

// textGrams is migration 7's memory_item_text_grams in Go: the distinct textGramBytes-byte
// grams at every textGramStride-th byte with three bytes left, none for a text longer than
// textIndexBytes.
func textGrams(text string) map[string]bool {
	out := map[string]bool{}
	if len(text) > textIndexBytes {
		return out
	}
	for p := 0; p+3 <= len(text); p += textGramStride {
		out[text[p:min(len(text), p+textGramBytes)]] = true
	}
	return out
}

// TestTextIndexBackfill: a schema at version 6 with rows written by the previous version is
// migrated to the text index (migration 7) and backfilled: every search equals
// memory.Matches, through the index for the needles it answers.
func TestTextIndexBackfill(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	name, q := oldSchema(t, h, "_text", 6)
	var old []memory.Item
	for _, text := range textIndexTexts() {
		c, err := json.Marshal(text)
		if err != nil {
			t.Fatal(err)
		}
		it := memory.NewItem(c, "x")
		p, err := relstore.Prepare(it, relstore.Rules{RejectNUL: true})
		if err != nil {
			t.Fatal(err)
		}
		// The previous build's statement (its Store), run before the migration.
		if _, err := h.admin.Exec(ctx, `INSERT INTO `+q+`.memory_items
			(scope, id, kind, created_at, metadata, content, search_text, tags, metadata_text, content_text)
			VALUES ('s', $1, 'memory_item', $2, $3::jsonb, $4::jsonb, $5, $6, $7::text, $8::text)`,
			p.ID, p.CreatedAt, string(p.Metadata), string(p.Content), p.SearchText, p.Tags,
			string(p.Metadata), string(p.Content)); err != nil {
			t.Fatal(err)
		}
		old = append(old, it)
	}
	s, err := Open(ctx, Options{URL: testURL, Schema: name, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	defer s.Close()
	checkText(t, s, old, textIndexNeedles())
	seqs, err := s.textCandidates(ctx, s.pool, ptr("item 4242 lorem"))
	if want := 1 + longTexts(old); err != nil || len(seqs) != want {
		t.Errorf("text index probe after the backfill: %v, %v; want %d candidates", seqs, err, want)
	}
	var entries int
	if err := h.admin.QueryRow(ctx, `SELECT count(*) FROM `+q+`.memory_item_text`).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, it := range old {
		want += len(textGrams(memory.SearchText(it.Content)))
	}
	if entries != want {
		t.Errorf("text index after the backfill: %d entries, want %d", entries, want)
	}
}
