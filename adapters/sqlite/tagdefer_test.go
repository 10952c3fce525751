package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// tagState is the tag index's deferred state: entries of rows no longer there (stale), the
// swept rows recorded for compactTags (dead), and the deferring flag.
type tagState struct{ stale, dead, deferring int }

func readTagState(t *testing.T, db *sql.DB) tagState {
	t.Helper()
	var g tagState
	err := db.QueryRow(`SELECT (SELECT count(*) FROM memory_item_tags WHERE seq NOT IN (SELECT seq FROM memory_items)),
		(SELECT count(*) FROM memory_item_tag_dead), deferring FROM memory_item_tag_defer`).Scan(&g.stale, &g.dead, &g.deferring)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSweepDefersTagEntries: a sweep batch leaves its rows' tag entries to compactTags
// (migration 8), and no search ever returns a swept item through them: tag walks and
// probes, text, retrieve. The batch that finds tagDeadMax swept rows recorded deletes their
// entries; any other delete removes its entries at once; the flag is never left set.
func TestSweepDefersTagEntries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tags.db")
	s, err := Open(ctx, Options{Path: path, Scope: "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	raw, err := sql.Open("sqlite", dsn(path, "rw", DefaultRequestTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	const n = tagDeadMax + 200
	t0 := time.Now().Add(-time.Hour)
	var ids []uuid.UUID
	if err := bulkInsertAt(ctx, raw, "s", n, func(id uuid.UUID) { ids = append(ids, id) },
		func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }); err != nil {
		t.Fatal(err)
	}
	policy := memory.RetentionPolicy{MaxAge: time.Hour}
	sweepThrough := func(last int) int64 {
		t.Helper()
		removed, err := s.Sweep(ctx, policy, t0.Add(time.Duration(last)*time.Millisecond+policy.MaxAge))
		if err != nil {
			t.Fatal(err)
		}
		return removed
	}
	// searches checks that the searches that read the tag index, and the others, return
	// exactly the live items among the first 200 BenchItems (live: from index first on).
	searches := func(first int) {
		t.Helper()
		for _, q := range []memory.Query{
			{Tags: []string{"t7"}, Limit: 50},                                    // a walk of the tag index
			{Tags: []string{"t7", "common"}, Limit: 5},                           // a walk of two tags
			{Tags: []string{"t7"}, Text: storetest.Text("ipsum w7 "), Limit: 50}, // a probe of the tag index
			{Tags: []string{"common"}, Limit: 3},
		} {
			hits, err := s.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range hits {
				i := slices.Index(ids, it.ID)
				if i < first {
					t.Errorf("search %+v returned item %d, swept (items from %d are live)", q, i, first)
				}
			}
			if len(hits) == 0 {
				t.Errorf("search %+v found nothing, want live items", q)
			}
		}
		for i := range first {
			if got, err := s.Retrieve(ctx, ids[i]); err != nil || got != nil {
				t.Fatalf("retrieve swept item %d: %v, %v", i, got, err)
			}
		}
	}
	if removed := sweepThrough(99); removed != 100 {
		t.Fatalf("first sweep removed %d, want 100", removed)
	}
	if g := readTagState(t, raw); g.stale != 200 || g.dead != 100 || g.deferring != 0 {
		t.Fatalf("after a batch of 100: %+v, want their 200 entries left, 100 rows recorded, the flag clear", g)
	}
	searches(100)
	// Batches of relstore.SweepBatch: the one that brings the recorded rows to tagDeadMax
	// compacts them, and those after it are left again.
	last := tagDeadMax + 100 - 1
	if removed := sweepThrough(last); removed != int64(last+1-100) {
		t.Fatalf("second sweep removed %d, want %d", removed, last+1-100)
	}
	wantDead := (last + 1) % (tagDeadMax + relstore.SweepBatch - 100) // rows after the compacting batch
	g := readTagState(t, raw)
	if g.dead >= tagDeadMax || g.stale != 2*g.dead || g.deferring != 0 {
		t.Fatalf("after %d rows swept: %+v, want fewer than %d rows recorded (about %d), their entries alone left, the flag clear", last+1, g, tagDeadMax, wantDead)
	}
	searches(last + 1)
	// Any other delete removes its row's entries at once.
	if _, err := raw.ExecContext(ctx, `DELETE FROM memory_items WHERE id = ?`, ids[n-1].String()); err != nil {
		t.Fatal(err)
	}
	if after := readTagState(t, raw); after != g {
		t.Fatalf("after a delete outside a sweep: %+v, want %+v (no entry of it left)", after, g)
	}
}
