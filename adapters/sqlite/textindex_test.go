package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
	"github.com/google/uuid"
)

// TestTextIndexMatchesReference: storetest.TextIndex over the suffix index (migration 6).
func TestTextIndexMatchesReference(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	st, err := h.MakeStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Store)
	storetest.TextIndex(t, s, storetest.TextIndexHooks{
		Candidates: func(ctx context.Context, needle string) (int, error) {
			query, args, ok := gramProbe(s.scope, needle)
			if !ok {
				return -1, nil
			}
			n, err := countProbe(ctx, s.db, nil, indexSeqs{query, args}, relstore.TagProbeLimit+1)
			if n > relstore.TagProbeLimit {
				return -1, err
			}
			return n, err
		},
		CheckRows: func(t *testing.T, _ []memory.Item) { checkGramRows(t, h.admin) },
		Delete: func(ctx context.Context, id uuid.UUID) error {
			_, err := h.admin.ExecContext(ctx, `DELETE FROM memory_items WHERE scope = ? AND id = ?`, s.scope, id.String())
			return err
		},
	})
}

// checkGramRows: the suffix index holds exactly the grams relstore.TextGrams computes for
// each row's search text, under its row's scope and seq, and otherwise only entries of
// seqs that no row has and memory_item_gram_dead records as dead (migration 7), which
// compaction removes later.
func checkGramRows(t *testing.T, db *sql.DB) {
	t.Helper()
	want := map[string]bool{}
	rows, err := db.Query(`SELECT scope, seq, search_text FROM memory_items`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var scope, text string
		var seq int64
		if err := rows.Scan(&scope, &seq, &text); err != nil {
			t.Fatal(err)
		}
		for g := range relstore.TextGrams(text) {
			want[fmt.Sprintf("%s|%d|%x", scope, seq, g)] = true
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	rows, err = db.Query(`SELECT scope, seq, gram FROM memory_item_grams
		WHERE seq IN (SELECT seq FROM memory_items) OR seq NOT IN (SELECT seq FROM memory_item_gram_dead)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var scope string
		var seq int64
		var gram []byte
		if err := rows.Scan(&scope, &seq, &gram); err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%s|%d|%x", scope, seq, gram)] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	missing, extra := 0, 0
	for k := range want {
		if !got[k] {
			missing++
		}
	}
	for k := range got {
		if !want[k] {
			extra++
		}
	}
	if missing != 0 || extra != 0 || len(want) == 0 {
		t.Errorf("suffix index: %d entries, %d of the live rows' grams missing, %d not of a live row's text (want %d)",
			len(got), missing, extra, len(want))
	}
}

// TestTextIndexBackfill: a file at schema version 5 with rows written by the previous build
// is migrated to the suffix index (migration 6) and backfilled: every search equals
// memory.Matches, through the index for the needles it answers.
func TestTextIndexBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v5.db")
	raw, err := sql.Open("sqlite", dsn(path, "rwc", DefaultRequestTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	v5 := schema
	v5.Migrations = schema.Migrations[:6]
	if err := v5.Migrate(ctx, conn{raw}); err != nil {
		t.Fatalf("migrate to version 5: %v", err)
	}
	old, prepared, err := relstore.TextIndexItems(relstore.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prepared {
		// The previous build's row format (its insertRow is unchanged).
		if _, err := raw.ExecContext(ctx, insertRow, rowArgs("s", p, time.Now())...); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, Options{Path: path, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	defer s.Close()
	storetest.TextMatchesReference(t, s, old, relstore.TextIndexNeedles())
	checkGramRows(t, raw)
}

// TestSearchWalksNeedNoSort: the walks of the tag index (one tag, several) and of the
// trigram matches read in insertion order as they come: their plans hold no sort, which
// would read every entry of a common tag or text before the first row.
func TestSearchWalksNeedNoSort(t *testing.T) {
	h := newHarness(t)
	tagsWalk := func(tags ...string) searchPlan {
		w, args := tagWalk(h.scope, tags)
		return searchPlan{walk: w, walkArgs: args}
	}
	w, args := textWalk("abc")
	textPlan := searchPlan{walk: w, walkArgs: args}
	for _, tt := range []struct {
		q    memory.Query
		plan searchPlan
	}{
		{memory.Query{Tags: []string{"a"}, Limit: 20}, tagsWalk("a")},
		{memory.Query{Tags: []string{"a", "b", "c"}, Limit: 20}, tagsWalk("a", "b", "c")},
		{memory.Query{Text: storetest.Text("abc"), Limit: 20}, textPlan},
		{memory.Query{Text: storetest.Text("abc"), Tags: []string{"a", "b"}, Limit: 20}, tagsWalk("a", "b")},
	} {
		sqlText, args, _ := buildSearchWith(h.scope, tt.q, tt.plan)
		if p := queryPlan(t, h, sqlText, args); strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%+v: the walk sorts:\n%s", tt.q, p)
		}
	}
}
