package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmem/memory-adapter-operator/adapters/internal/relstore"
	"github.com/agentmem/memory-adapter-operator/adapters/storetest"
	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// gramState is the suffix index's compaction state: its entries, those of rows no longer
// there (dead), the seqs it records as dead, and the walk's pass and debt.
type gramState struct {
	entries, stale, deadSeqs, pass, owed int
}

func readGramState(t *testing.T, db *sql.DB) gramState {
	t.Helper()
	var g gramState
	err := db.QueryRow(`SELECT (SELECT count(*) FROM memory_item_grams),
		(SELECT count(*) FROM memory_item_grams WHERE seq NOT IN (SELECT seq FROM memory_items)),
		(SELECT count(*) FROM memory_item_gram_dead), pass, owed FROM memory_item_gram_walk`).
		Scan(&g.entries, &g.stale, &g.deadSeqs, &g.pass, &g.owed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// openV6WithItems writes n storetest.BenchItems into a file at schema version 6 (the suffix
// index deleted in its trigger), item i stored at t0 plus i seconds, and opens it, which
// migrates it to the compacted index (migration 7). It returns the store, a handle of its
// own on the file and the items.
func openV6WithItems(t *testing.T, n int, t0 time.Time) (*Store, *sql.DB, []memory.Item) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v6.db")
	raw, err := sql.Open("sqlite", dsn(path, "rwc", DefaultRequestTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	v6 := schema
	v6.Migrations = schema.Migrations[:7]
	if err := v6.Migrate(ctx, conn{raw}); err != nil {
		t.Fatalf("migrate to version 6: %v", err)
	}
	items := make([]memory.Item, n)
	for i := range items {
		items[i] = storetest.BenchItem(i)
		p, err := relstore.Prepare(items[i], relstore.Rules{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.ExecContext(ctx, insertRow, rowArgs("s", p, t0.Add(time.Duration(i)*time.Second))...); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, Options{Path: path, Scope: "s"})
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, raw, items
}

// compactionNeedles are long needles (the suffix index's) that name one item each, for
// items swept early, late and never, and ones many items share.
func compactionNeedles() []string {
	var out []string
	for _, i := range []int{0, 3, 150, 299, 300, 599} {
		out = append(out, fmt.Sprintf("item %d lorem", i))
	}
	return append(out, "ipsum w3 dolor", "lorem ipsum")
}

// TestGramCompaction: a retention sweep leaves its rows' suffix entries to the compaction
// walk (migration 7), which removes them over the following sweeps in passes over the index;
// at every step every search equals memory.Matches over the live items, the index holds
// every live row's grams, and an entry of a row that is gone belongs to a seq recorded as
// dead. Dead entries stay a bounded part of the index, and the walk completes passes, after
// which it forgets the dead seqs whose entries it has all walked.
func TestGramCompaction(t *testing.T) {
	ctx := context.Background()
	const n, perSweep = 600, 5
	t0 := time.Unix(1_700_000_000, 0)
	s, raw, items := openV6WithItems(t, n, t0)
	policy := memory.RetentionPolicy{MaxAge: time.Hour}
	sweepThrough := func(i int) {
		t.Helper()
		// Items 0..i are stored at or before t0+i s.
		removed, err := s.Sweep(ctx, policy, t0.Add(time.Duration(i)*time.Second+policy.MaxAge))
		if err != nil {
			t.Fatalf("sweep through item %d: %v", i, err)
		}
		if want := min(perSweep, n); i >= 0 && removed != int64(want) {
			t.Fatalf("sweep through item %d removed %d, want %d", i, removed, want)
		}
	}
	sweepThrough(perSweep - 1)
	first := readGramState(t, raw)
	if first.stale == 0 || first.deadSeqs != perSweep {
		t.Fatalf("after the first sweep: %+v, want dead entries left to the walk and %d dead seqs", first, perSweep)
	}
	live := items[perSweep:]
	storetest.TextMatchesReference(t, s, live, compactionNeedles())
	checkGramRows(t, raw)

	maxStale := 0.0
	for last := 2*perSweep - 1; last < 450; last += perSweep {
		sweepThrough(last)
		live = items[last+1:]
		g := readGramState(t, raw)
		if f := float64(g.stale) / float64(g.entries); f > maxStale {
			maxStale = f
		}
		if last%50 == 4 {
			storetest.TextMatchesReference(t, s, live, compactionNeedles())
			checkGramRows(t, raw)
		}
	}
	end := readGramState(t, raw)
	storetest.TextMatchesReference(t, s, live, compactionNeedles())
	checkGramRows(t, raw)
	// 450 of 600 items swept, a walk of four entries per dead one: several passes.
	if end.pass < 3 {
		t.Errorf("the walk completed %d passes over the index, want at least 3 (state %+v)", end.pass, end)
	}
	if end.deadSeqs >= 450 {
		t.Errorf("%d dead seqs recorded after %d passes: the walk forgets none", end.deadSeqs, end.pass)
	}
	// A quarter of the index at most, as gramWalkPerDead aims, plus one sweep's rows.
	if maxStale > 1.0/gramWalkPerDead+0.1 {
		t.Errorf("dead entries reached %.0f%% of the suffix index", 100*maxStale)
	}
	t.Logf("after the sweeps: %+v; dead entries at most %.0f%% of the index", end, 100*maxStale)
}

// TestGramCompactionAfterMassDelete: rows deleted outside a sweep (a harness's reset, an
// administrator) leave their entries and a debt; the next sweeps walk the whole index,
// remove them, forget the dead seqs and cut the debt to nothing, so later sweeps walk nothing.
func TestGramCompactionAfterMassDelete(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	s, raw, _ := openV6WithItems(t, 300, t0)
	if _, err := raw.ExecContext(ctx, `DELETE FROM memory_items WHERE scope = 's'`); err != nil {
		t.Fatal(err)
	}
	g := readGramState(t, raw)
	if g.stale != g.entries || g.entries == 0 || g.deadSeqs != 300 {
		t.Fatalf("after the delete: %+v, want every entry dead and 300 dead seqs", g)
	}
	for i := range 3 {
		if _, err := s.Sweep(ctx, memory.RetentionPolicy{MaxAge: time.Hour}, t0); err != nil {
			t.Fatalf("sweep %d: %v", i, err)
		}
	}
	if g := readGramState(t, raw); g.entries != 0 || g.deadSeqs != 0 || g.owed != 0 {
		t.Errorf("after three sweeps: %+v, want no entries, no dead seqs and no debt", g)
	}
}
